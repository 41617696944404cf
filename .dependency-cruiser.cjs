/**
 * The folder rules of src/, checked by dependency-cruiser in `npm run lint` (and so in `npm test`).
 * docs/architecture.md draws the same picture ("Import direction").
 *
 * Layers, lowest first; a folder may import its own files and the folders of the layers below it,
 * never a folder beside it or above it:
 *   0  engine                        the kubelet's pod-worker port: imports nothing of podctl, no I/O
 *   1  domain                        shapes shared by the layers above (the node session's contract)
 *   2  lib                           small helpers: flags, errors, output, selectors
 *   3  cri · store · kube · metrics  the node's parts: runtime, checkpoint store, API server, metrics
 *   4  session                       the node session that wires the parts to the engine
 *   5  services                      one service per command
 *   6  commands · base · tui · (the entry files in src/)
 */
const LAYERS = [['engine'], ['domain'], ['lib'], ['cri', 'store', 'kube', 'metrics'], ['session'], ['services'], ['commands', 'base', 'tui']];
const TOP = LAYERS.length - 1;

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

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...layerRules,
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
    exclude: { path: '^src/cri/generated/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.json'] },
    moduleSystems: ['es6', 'cjs'],
  },
};
