/**
 * The folder rules of src/, checked by dependency-cruiser in `npm run lint` (and so in `npm test`).
 * docs/architecture.md draws the same picture ("Import direction").
 *
 * Layers, lowest first; a folder may import its own files and the folders of the layers below it,
 * never a folder beside it or above it:
 *   0  engine                        the kubelet's pod-worker port: imports nothing of podctl, no I/O
 *   1  domain                        shapes shared by the layers above (the node session's contract)
 *   2  lib                           small shared helpers: errors, output, selectors, durations
 *   3  cri · store · kube · metrics  the node's parts: runtime, checkpoint store, API server, metrics
 *   4  session                       the node session that wires the parts to the engine
 *   5  services                      the features, one folder each (sub-layers below)
 *   6  commands · base · tui · (the entry files in src/)
 *
 * Some folders are split into sub-folders with layers of their own (SUBLAYERS, lowest first): a
 * sub-folder imports its own files and the sub-folders of the layers below it, never one beside it
 * or above it, and never the files at its parent's top (an index that re-exports them).
 */
const LAYERS = [['engine'], ['domain'], ['lib'], ['cri', 'store', 'kube', 'metrics'], ['session'], ['services'], ['commands', 'base', 'tui']];
const TOP = LAYERS.length - 1;

const SUBLAYERS = {
  // the CRI client (and the kubelet's names in CRI objects) · the pod cache (runtime pods rebuilt
  // from listings and events) and the embedded simulator · the kubelet's runtime manager (syncer,
  // stop order, preStop hooks)
  cri: [['client'], ['cache', 'simulator'], ['runtime']],
  // what a pod is waiting on, the API door, the runtime itself · kill and evict · drain · the
  // agent's housekeeping, the watch and the shutdown guard
  services: [['diagnose', 'api', 'runtime'], ['terminate'], ['drain'], ['housekeeping', 'watch', 'shutdown']],
};

/**
 * What the screen (src/tui) may import from the services at run time: each feature's output module
 * (it draws). Everything else it shows comes to it as data or as rules handed over by the watch
 * service (services/watch/screen-rules.ts), so from any other service file it imports types only.
 */
const TUI_SERVICE_IMPORTS = ['[^/]+/output\\.ts'];

const folder = (name) => `^src/${name}/`;
const anyOf = (names) => `^src/(${names.join('|')})/`;

/** For each folder, the folders it must not import: those beside it and above it. */
const layerRules = LAYERS.flatMap((layer, rank) =>
  layer.map((name) => {
    const forbidden = LAYERS.flatMap((other, otherRank) => (otherRank > rank || (otherRank === rank && rank !== TOP) ? other.filter((o) => o !== name) : []));
    return forbidden.length === 0
      ? undefined
      : {
          name: `layer-${name}`,
          comment: `src/${name} (layer ${rank}) imports only its own files and the layers below it`,
          severity: 'error',
          from: { path: folder(name) },
          to: { path: anyOf(forbidden) },
        };
  }),
).filter(Boolean);

/** For each sub-folder, the sub-folders of its parent it must not import (beside it and above it), and its parent's top files. */
const subLayerRules = Object.entries(SUBLAYERS).flatMap(([parent, layers]) =>
  layers.flatMap((layer, rank) =>
    layer.map((name) => {
      const forbidden = layers.flatMap((other, otherRank) => (otherRank >= rank ? other.filter((o) => o !== name) : []));
      return {
        name: `layer-${parent}-${name}`,
        comment: `src/${parent}/${name} (sub-layer ${rank} of ${parent}) imports only its own files and the sub-layers below it`,
        severity: 'error',
        from: { path: folder(`${parent}/${name}`) },
        to: { path: forbidden.length === 0 ? `^src/${parent}/[^/]+$` : `^src/${parent}/([^/]+$|(${forbidden.join('|')})/)` },
      };
    }),
  ),
);

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...layerRules,
    ...subLayerRules,
    {
      name: 'sub-folders-only',
      comment: 'the files of a folder split into sub-layers live in its sub-folders (its top holds at most an index)',
      severity: 'error',
      from: {},
      to: { path: `^src/(${Object.keys(SUBLAYERS).join('|')})/(?!index\\.ts$)[^/]+$` },
    },
    {
      name: 'services-return-data',
      comment:
        "a service returns data and the CLI/TUI render it: drawing (tables, summary lines, explain text) lives in each feature's output.ts, which only the commands, the TUI and other output modules import; no other service file imports lib/output",
      severity: 'error',
      from: { path: '^src/services/', pathNot: '^src/services/[^/]+/output\\.ts$' },
      to: { path: ['^src/services/[^/]+/output\\.ts$', '^src/lib/output\\.ts$'] },
    },
    {
      name: 'tui-renders-data',
      comment: `the TUI renders what the services give it: from src/services it imports types, and at run time only ${TUI_SERVICE_IMPORTS.join(', ')}; a service's logic reaches it through the watch service (services/watch/screen-rules.ts)`,
      severity: 'error',
      from: { path: folder('tui') },
      to: { path: folder('services'), pathNot: `^src/services/(${TUI_SERVICE_IMPORTS.join('|')})$`, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'engine-no-io',
      comment: 'the engine does no I/O: no file system, network, processes or timers of its own beyond the clock it is given',
      severity: 'error',
      from: { path: folder('engine') },
      to: { dependencyTypes: ['core'], path: '^(node:)?(fs|fs/promises|net|http|https|http2|child_process|dgram|dns|tls|worker_threads|cluster)$' },
    },
    {
      name: 'engine-no-packages',
      comment: 'the engine imports no package at run time (the Kubernetes API types are type-only imports)',
      severity: 'error',
      from: { path: folder('engine') },
      to: { dependencyTypes: ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-no-pkg', 'npm-unknown'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-entry-imports',
      comment: 'only the entry files (cli.ts, boot.ts, launch.ts, sea.ts) import each other',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(cli|boot|launch|sea)\\.ts$' },
      to: { path: '^src/(cli|boot|launch|sea)\\.ts$' },
    },
    {
      name: 'no-circular',
      comment: 'no import cycles (test/architecture/cycles.test.ts checks the same with type-only imports)',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/cri/client/generated/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.json'] },
    moduleSystems: ['es6', 'cjs'],
  },
};
