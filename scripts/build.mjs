/**
 * Bundles podctl into dist/ with esbuild (run by `npm run build`, after the type check and before
 * `oclif manifest`).
 *
 * Why: Node's ESM loader pays per module (resolve, read, compile), and `podctl status` used to load
 * ~300 of them (@oclif/core's, grpc-js's, and ours). Bundled, a command loads a handful of files.
 *
 * Layout (what oclif and the tools rely on):
 * - dist/commands/<id>.js — one entry per command (package.json `oclif.commands` is ./dist/commands;
 *   the manifest and command discovery work as before). Shared code lives in dist/chunks/, outside
 *   the commands folder, so oclif never mistakes a chunk for a command.
 * - dist/cli.js — oclif's `execute`, bundled with the commands so that bin/run.js and every command
 *   share one copy of @oclif/core.
 * - Lazily imported modules stay lazy: each `await import()` becomes its own chunk, loaded only when
 *   reached. A few of them are entries with stable paths (dist/session/open.js, …) for the
 *   benchmarks.
 * - Heavy or optional packages are not bundled and are still loaded lazily from node_modules, only
 *   where used: @kubernetes/client-node, ink, react, prom-client, yaml. valibot (the store's record
 *   schemas, on every command's path) is small and bundled.
 */
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { builtinExportNames, interopCopiedOnce, interopWithoutDescriptorReads, lazyBuiltins, lazyOclifDependencies, oclifWithoutStartupWork } from './esbuild-plugins.mjs';

const root = path.resolve(import.meta.dirname, '..');

/** Each character outside ASCII as a `\uXXXX` escape: the same string in JavaScript and JSON. */
const asciiOnly = (text) => text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

// `node scripts/build.mjs --ascii-manifest` (npm run build's last step, after `oclif manifest`):
// oclif reads oclif.manifest.json (110 KB) at every start of bin/run.js, and its 23 characters
// outside ASCII put the whole file on Node's slow UTF-8 decoder; escaped, it parses to the same
// object (read + decode 5.6 -> 4.2 ms, docs/bench/startup.md).
if (process.argv.includes('--ascii-manifest')) {
  const manifestPath = path.join(root, 'oclif.manifest.json');
  writeFileSync(manifestPath, asciiOnly(readFileSync(manifestPath, 'utf8')));
  process.exit(0);
}
// src/commands/<id>.ts, and src/commands/<topic>/<sub>.ts for commands with a topic (`autocomplete script`)
const commands = readdirSync(path.join(root, 'src/commands'), { recursive: true, encoding: 'utf8' })
  .map((f) => f.split(path.sep).join('/'))
  .filter((f) => /\.tsx?$/.test(f) && !f.endsWith('.d.ts'));

const entryPoints = {
  cli: 'src/cli.ts',
  ...Object.fromEntries(commands.map((f) => [`commands/${f.replace(/\.tsx?$/, '')}`, `src/commands/${f}`])),
  // Stable paths of lazily loaded modules (also chunks of the commands), for bench/startup.bench.ts.
  'session/open': 'src/session/open.ts',
  'services/diagnose/status': 'src/services/diagnose/status.ts',
  'services/diagnose/output': 'src/services/diagnose/output.ts',
  'cri/client/grpc-modules': 'src/cri/client/grpc-modules.ts',
  'lib/output': 'src/lib/output.ts',
  'lib/refs': 'src/lib/refs.ts',
  // The watch screen: Ink is an ES module with top-level await, which CommonJS cannot require, so
  // dist/podctl.cjs imports this ES-module build of the screen instead of bundling it.
  'tui/index': 'src/tui/index.tsx',
};

const external = [
  // heavy, used only by some commands: loaded from node_modules on first use
  '@kubernetes/client-node',
  'ink',
  // Ink's own ANSI tokenizer, which the watch's frame composer (src/tui/frame-output.ts) uses too:
  // one copy, the one Ink loads
  '@alcalzone/ansi-tokenize',
  'react',
  'react/*',
  'prom-client',
  // "did you mean" at a terminal: the plugin and its prompt library (~1 MB with @inquirer's
  // editors), loaded only when a command word is unknown and a terminal can answer
  '@oclif/plugin-not-found',
  // CommonJS packages imported with `await import()` for their named exports: Node's own CommonJS
  // interop provides them (a bundled copy would expose only `default`)
  'yaml',
  // required by dependencies only on paths podctl never takes (grpc-js channelz, oclif's TS support)
  '@grpc/proto-loader',
  'typescript',
  'ts-node',
  'tsx',
  'pnpapi',
];

// Node's less common built-in modules are required on first use (scripts/esbuild-plugins.mjs)
const builtinNames = builtinExportNames();
const result = await build({
  absWorkingDir: root,
  entryPoints,
  outdir: 'dist',
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  jsx: 'automatic',
  external,
  plugins: [lazyOclifDependencies, oclifWithoutStartupWork, lazyBuiltins(builtinNames, { requiresOnly: true })],
  // oclif's start-up check of the Node version against its own engines (podctl's package.json is
  // engine-strict already) loads semver, ~50 modules: compiled out.
  define: { 'process.env.OCLIF_DISABLE_ENGINE_WARNING': '"1"' },
  // Whitespace and syntax only: identifiers (class and error names in messages) stay as written.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  // Bundled CommonJS dependencies call require() for Node built-ins and lazily loaded packages.
  banner: { js: "import { createRequire as __podctlCreateRequire } from 'node:module'; const require = __podctlCreateRequire(import.meta.url);" },
  metafile: true,
  logLevel: 'warning',
});

/**
 * dist/podctl.cjs: the same code as one CommonJS script (oclif and every command; src/launch.ts),
 * which dist/boot.js (bin/run.js) compiles with a V8 code cache. Dynamic imports stay lazily
 * initialised modules inside the script; the external packages stay real `import()`s.
 */
const watchScreenFromEsmBuild = {
  name: 'watch-screen-from-esm-build',
  setup(b) {
    // `import('../../tui/index.js')` in src/services/watch/watch.ts: resolved at run time (by src/boot.ts,
    // relative to dist/) to the ES-module entry dist/tui/index.js.
    b.onResolve({ filter: /\/tui\/index\.js$/ }, () => ({ path: './tui/index.js', external: true }));
  },
};
/** What the two CommonJS outputs (the CLI script and its loader) share. */
const commonJs = {
  absWorkingDir: root,
  outdir: 'dist',
  outExtension: { '.js': '.cjs' },
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  metafile: true,
  logLevel: 'warning',
};
const cjs = await build({
  ...commonJs,
  entryPoints: { podctl: 'src/launch.ts' },
  jsx: 'automatic',
  external,
  plugins: [lazyOclifDependencies, oclifWithoutStartupWork, watchScreenFromEsmBuild, lazyBuiltins(builtinNames)],
  define: {
    'process.env.OCLIF_DISABLE_ENGINE_WARNING': '"1"',
    // the few `import.meta.url` uses (createRequire) resolve from the script itself
    'import.meta.url': '__podctlScriptUrl',
  },
  banner: { js: "const __podctlScriptUrl = require('node:url').pathToFileURL(__filename).href;" },
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
});
// The packages kept out of the bundle are ES modules loaded with `import()`. Inside a vm.Script
// (src/boot.ts) `import()` needs an experimental vm option in Node 20, so each one is routed to
// boot's own import (`__podctlImport`, a parameter of the script's wrapper). Exactly these
// specifiers are expected; anything else fails the build rather than a command at run time.
const EXTERNAL_IMPORTS = ['./tui/index.js', '@kubernetes/client-node', 'yaml', '@oclif/plugin-not-found'];
const bundlePath = path.join(root, 'dist/podctl.cjs');
const seenImports = new Set();
// every `import(` call (not the word inside a string): podctl's own, and oclif's module loader's
// (for plugins and hooks podctl does not have)
const rewritten = readFileSync(bundlePath, 'utf8').replace(/(?<![\w$."'`])import\((?:("[^"]+")\))?/g, (_, specifier) => {
  if (specifier === undefined) return '__podctlImport(';
  seenImports.add(JSON.parse(specifier));
  return `__podctlImport(${specifier})`;
});
const unexpected = [...seenImports].filter((s) => !EXTERNAL_IMPORTS.includes(s));
const missing = EXTERNAL_IMPORTS.filter((s) => !seenImports.has(s));
if (unexpected.length > 0 || missing.length > 0) {
  throw new Error(`dist/podctl.cjs: unexpected dynamic imports (unexpected: ${unexpected.join(', ') || '-'}; missing: ${missing.join(', ') || '-'})`);
}
// Every character outside ASCII as a \u escape (esbuild leaves a few in regular expression literals):
// V8 keeps an ASCII script one byte a character and reads it from UTF-8 on the fast path; one other
// character made the whole 1.7 MB script two bytes a character, decoded at every start (as the
// single executable's scripts are made, scripts/sea.mjs).
writeFileSync(bundlePath, asciiOnly(interopCopiedOnce(interopWithoutDescriptorReads(rewritten, bundlePath), bundlePath)));
const bundleHash = createHash('sha256')
  .update(readFileSync(path.join(root, 'dist/podctl.cjs')))
  .digest('hex')
  .slice(0, 16);
const boot = await build({
  ...commonJs,
  entryPoints: { boot: 'src/boot.ts' },
  define: { __PODCTL_BUNDLE_HASH__: JSON.stringify(bundleHash) },
});
Object.assign(result.metafile.outputs, cjs.metafile.outputs, boot.metafile.outputs);

const outputs = Object.entries(result.metafile.outputs);
const bytes = outputs.reduce((sum, [, o]) => sum + o.bytes, 0);
console.error(`bundled ${Object.keys(result.metafile.inputs).length} modules into ${outputs.length} files (${(bytes / 1024).toFixed(0)} KiB) in dist/`);
