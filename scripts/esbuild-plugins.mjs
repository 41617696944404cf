/**
 * esbuild plugins shared by scripts/build.mjs (dist/) and scripts/sea.mjs (the single executable).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');

/**
 * @oclif/core requires some packages when it loads but uses them only on paths `podctl status` and
 * the other commands do not take (rendering help templates, globbing for commands when there is no
 * manifest, plugin matching, spinners; Node's child_process for the shell of a Windows user, and
 * readline for a `-` argument read from stdin; lilconfig for a plugin whose package.json has no
 * oclif section, which reads `fs.promises` when it loads; clean-stack for an error's stack, which
 * reads the home directory when it loads). Each is replaced, inside oclif only, by a stand-in
 * that loads the real (bundled) package, or Node's module, on first use; CommonJS interop
 * (`__importDefault`) sees the same exports as before.
 */
const LAZY_IN_OCLIF = ['clean-stack', 'ejs', 'lilconfig', 'tinyglobby', 'minimatch', 'cli-spinners', 'semver', 'node:child_process', 'node:readline'];
export const lazyOclifDependencies = {
  name: 'lazy-oclif-dependencies',
  setup(b) {
    const filter = new RegExp(`^(${LAZY_IN_OCLIF.join('|')})$`);
    const inOclif = (importer) => importer.includes(`${path.sep}@oclif${path.sep}core${path.sep}`);
    b.onResolve({ filter }, (args) => (inOclif(args.importer) ? { path: args.path, namespace: 'podctl-lazy' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'podctl-lazy' }, (args) => ({
      contents: `let real;
const load = () => (real ??= require(${JSON.stringify(args.path)}));
module.exports = new Proxy({}, {
  get(_, key) {
    if (key === '__esModule') return true;
    const m = load();
    if (key === 'default') return m && m.__esModule ? m.default : m;
    return m[key];
  },
});`,
      loader: 'js',
      resolveDir: root,
    }));
  },
};

/**
 * What @oclif/core does at every start that podctl does without, its behaviour kept:
 * - the commands of a plugin are sorted with `localeCompare`, whose first call builds an ICU
 *   collator; a code-unit comparison orders podctl's command ids (lower-case ASCII, `-` and `:`)
 *   the same (test/commands/contract.test.ts: help and manifest);
 * - its JSON reader (the user's theme, the manifest) reads with Node's callback `readFile`, which
 *   does not load fs/promises;
 * - the platform check imports wsl-utils for `isWsl`, and wsl-utils requires Node's child_process
 *   when it loads: oclif gets `isWsl` from is-wsl (what wsl-utils exports) and wsl-utils on first
 *   use of anything else;
 * - Config.load asked is-wsl (which reads /proc/version, looks for /proc/sys/fs/binfmt_misc/WSLInterop
 *   and /run/WSL, and loads is-inside-container and is-docker) for `config.platform`, which only the
 *   user agent (`--version`, root help) and help's examples read: `platform` and `userAgent` are
 *   getters that ask on first read (what they say is unchanged), `windows` and the macOS cache
 *   directory are decided by Node's `os.platform()` (WSL is neither), and a command's `init` hands
 *   http-call the user agent as a getter instead of reading it.
 * Each rewrite must find its text: an @oclif/core that changed fails the build instead of silently
 * keeping the cost.
 */
const OCLIF_REWRITES = [
  {
    // a command whose argument is optional reads it from stdin when stdin is not a terminal (10 ms at
    // most): the same lines, split as readline splits them, without loading readline
    file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]parser[\\/]parse\.js$/,
    from: `        const rl = (0, node_readline_1.createInterface)({
            input: stdin,
            output: stdout,
            terminal: false,
        });
        rl.on('line', (line) => {
            lines.push(line);
        });
        rl.once('close', () => {
            const result = lines.join(node_os_1.EOL);`,
    to: `        const chunks = [];
        const onData = (chunk) => chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
        const stop = () => { stdin.off('data', onData); stdin.off('end', onEnd); stdin.pause(); };
        const rl = { close: stop };
        const onEnd = () => {
            stop();
            lines.push(...Buffer.concat(chunks).toString('utf8').split(/\\r\\n|\\n|\\r/));
            if (lines.at(-1) === '') lines.pop();
            const result = lines.join(node_os_1.EOL);`,
  },
  {
    // ... and when stdin is a character device that is not a terminal (/dev/null: a service, cron, a
    // spawned process without input), answers at once as reading it would ('' or nothing), without
    // making process.stdin (a file stream, which loads fs/promises and readline's history). Linux's
    // memory devices (major 1: /dev/null, /dev/zero…) are never a terminal: node:tty is not loaded
    // to ask.
    file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]parser[\\/]parse\.js$/,
    from: `    const { stdin, stdout } = process;`,
    to: `    const stdinStat = require('node:fs').fstatSync(0, { throwIfNoEntry: false });
    if (stdinStat?.isCharacterDevice() && (((stdinStat.rdev >>> 8) & 0xfff) === 1 || !require('node:tty').isatty(0))) return '';
    const { stdin, stdout } = process;`,
  },
  {
    file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]parser[\\/]parse\.js$/,
    from: `            resolve(result);
        });
        signal.addEventListener('abort', () => {`,
    to: `            resolve(result);
        };
        stdin.on('data', onData);
        stdin.once('end', onEnd);
        signal.addEventListener('abort', () => {`,
  },
  {
    // every command reads the user's theme.json (and, from dist/, the manifest) through this: Node's
    // callback readFile does not load fs/promises (its FileHandle, streams and readline, ~8 ms)
    file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]util[\\/]fs\.js$/,
    from: "const contents = await (0, promises_1.readFile)(path, 'utf8');",
    to: "const contents = await new Promise((resolve, reject) => (0, node_fs_1.readFile)(path, 'utf8', (error, text) => (error ? reject(error) : resolve(text))));",
  },
  {
    file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]config[\\/]plugin\.js$/,
    from: '.sort((a, b) => a.id.localeCompare(b.id))',
    to: '.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))',
  },
  {
    file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]util[\\/]os\.js$/,
    from: "(await import('wsl-utils')).isWsl",
    to: "(await import('is-wsl')).default",
    // is-wsl as wsl-utils resolves it (oclif's file requires nothing else that is not Node's)
    resolveFrom: 'wsl-utils',
  },
  {
    file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]util[\\/]os\.js$/,
    from: 'exports.getPlatform = getPlatform;',
    to: "exports.getPlatform = getPlatform;\nexports.podctlPlatformSync = () => (require('is-wsl').default ? 'wsl' : (0, node_os_1.platform)());",
  },
  {
    file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]config[\\/]config\.js$/,
    from: `        this.platform = await (0, os_1.getPlatform)();
        this.windows = this.platform === 'win32';`,
    to: `        let podctlPlatform;
        Object.defineProperty(this, 'platform', { configurable: true, enumerable: true, get: () => (podctlPlatform ??= (0, os_1.podctlPlatformSync)()), set: (value) => { podctlPlatform = value; } });
        this.windows = (0, node_os_1.platform)() === 'win32';`,
  },
  {
    file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]config[\\/]config\.js$/,
    from: `        if (this.platform === 'win32')
            this.dirname = this.dirname.replace('/', '\\\\');
        this.userAgent = \`\${this.name}/\${this.version} \${this.platform}-\${this.arch} node-\${process.version}\`;`,
    to: `        if (this.windows)
            this.dirname = this.dirname.replace('/', '\\\\');
        let podctlUserAgent;
        Object.defineProperty(this, 'userAgent', { configurable: true, enumerable: true, get: () => (podctlUserAgent ??= \`\${this.name}/\${this.version} \${this.platform}-\${this.arch} node-\${process.version}\`), set: (value) => { podctlUserAgent = value; } });`,
  },
  {
    file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]config[\\/]config\.js$/,
    from: "return (this.platform === 'darwin' && ",
    to: "return ((0, node_os_1.platform)() === 'darwin' && ",
  },
  {
    file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]command\.js$/,
    from: "g['http-call'].userAgent = this.config.userAgent;",
    to: "Object.defineProperty(g['http-call'], 'userAgent', { configurable: true, enumerable: true, get: () => this.config.userAgent });",
  },
];
/**
 * Requires inside @oclif/core made lazy: what every start evaluated only to define what a command may
 * use later (help and its formatters, the spinner, the error renderer's wrap-ansi and theme). Each
 * listed `require("…")` becomes a stand-in (`__podctlLazy`) that requires the module on first use of
 * one of its properties; oclif reads these only inside functions (`help_1.Help`, `ux_1.ux`), and
 * CommonJS interop (`__importDefault`, `__importStar`) sees an ES module whose `default` is what it
 * was. esbuild still bundles each module (its `require_…()` runs on first use).
 */
const LAZY_REQUIRES_IN_OCLIF = [
  {
    // the package's index: each part of oclif (help, ux, parser, performance…) on first use of its export
    file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]index\.js$/,
    requires: [
      './args',
      './command',
      './config',
      './constraints',
      './errors',
      './errors/handle',
      './execute',
      './flags',
      './flush',
      './help',
      './interfaces',
      './logger',
      './main',
      './module-loader',
      './parser',
      './performance',
      './settings',
      './util/ids',
      './ux',
    ],
  },
  // the help (its formatters, the module loader, ux): only when help, or a parse error's help, is shown
  { file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]errors[\\/]handle\.js$/, requires: ['../help/index'] },
  { file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]main\.js$/, requires: ['./help', './ux'] },
  // (main's every run reads the help flags and the argv's command id: from help/util, which the
  // config loads anyway, not through the help's index)
  { file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]command\.js$/, requires: ['./ux'] },
  // help's class for a --help flag; the module loader and TypeScript paths for a plugin's commands
  // and hooks (podctl's commands are served by src/launch.ts)
  { file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]flags\.js$/, requires: ['./help'] },
  { file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]config[\\/]plugin\.js$/, requires: ['../module-loader', './ts-path'] },
  { file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]config[\\/]config\.js$/, requires: ['../ux', '../ux/theme', '../module-loader', './ts-path'] },
  // ux (every command's output goes through ux.stdout): the spinner (a terminal's stderr only), the
  // theme's colours (supports-color, node:tty) and the JSON colourer on first use (UX_CALLS_LAZY)
  { file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]ux[\\/]index\.js$/, requires: ['./action/spinner', './colorize-json', './theme'] },
  // a parse error's message (its list of arguments, coloured); the flags' usage for help
  { file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]parser[\\/]errors\.js$/, requires: ['../ux/list', '../ux/theme'] },
  { file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]parser[\\/]help\.js$/, requires: ['../ux'] },
  // an error's rendering: wrapped to the screen's width, in the theme's colours
  { file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]errors[\\/]errors[\\/]cli\.js$/, requires: ['indent-string', 'wrap-ansi', '../../screen', '../../ux/theme'] },
  { file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]errors[\\/]errors[\\/]pretty-print\.js$/, requires: ['indent-string', 'wrap-ansi', '../../screen'] },
];
const HELP_UTIL_IN_MAIN = ['getHelpFlagAdditions', 'normalizeArgv'].map((name) => ({
  file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]main\.js$/,
  from: `(0, help_1.${name})`,
  to: `(0, require("./help/util").${name})`,
}));
/**
 * ux's functions that read a lazily required module: each called through, not read when ux loads;
 * and its `action` (a spinner when stderr is a terminal, which reads cli-spinners' frames), made on
 * first use: podctl's commands never use it.
 */
const UX_CALLS_LAZY = [
  ['    colorize: theme_1.colorize,', '    colorize: (...args) => theme_1.colorize(...args),'],
  ['    colorizeJson: colorize_json_1.default,', '    colorizeJson: (...args) => colorize_json_1.default(...args),'],
  [
    "exports.action = ACTION_TYPE === 'spinner' ? new spinner_1.default() : new simple_1.default();",
    "let podctlAction;\nObject.defineProperty(exports, 'action', { enumerable: true, get: () => (podctlAction ??= ACTION_TYPE === 'spinner' ? new spinner_1.default() : new simple_1.default()) });",
  ],
  ['    action: exports.action,', '    get action() { return exports.action; },'],
].map(([from, to]) => ({ file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]ux[\\/]index\.js$/, from, to }));
const LAZY_REQUIRE_HELPER = `function __podctlLazy(load) {
  let real;
  const get = () => (real ??= load());
  return new Proxy({}, {
    get(_, key) {
      if (key === '__esModule') return true;
      const m = get();
      if (key === 'default') return m && m.__esModule ? m.default : m;
      return m[key];
    },
  });
}
`;
/** LAZY_REQUIRES_IN_OCLIF as rewrites: the stand-in's helper after "use strict", then each require. */
const lazyRequireRewrites = () =>
  LAZY_REQUIRES_IN_OCLIF.flatMap(({ file, requires }) => [
    { file, from: '"use strict";', to: `"use strict";\n${LAZY_REQUIRE_HELPER}` },
    ...requires.map((spec) => ({ file, from: `require("${spec}")`, to: `__podctlLazy(() => require("${spec}"))`, all: true })),
  ]);

/**
 * oclif's logger makes a `debug` function per namespace. Without DEBUG in the environment each is
 * disabled (the package enables namespaces from DEBUG when it loads), so the package (with
 * supports-color, node:tty and ms) is loaded only when DEBUG is set; otherwise a logger is a function
 * that does nothing, as a disabled `debug` does.
 */
const DEBUG_ONLY_WHEN_ASKED = {
  file: /[\\/]@oclif[\\/]core[\\/]lib[\\/]logger\.js$/,
  from: 'const debug_1 = __importDefault(require("debug"));',
  to: 'const debug_1 = { default: (namespace) => (process.env.DEBUG ? require("debug")(namespace) : Object.assign(() => {}, { enabled: false, namespace })) };',
};

/** The plugin applying OCLIF_REWRITES and `extra` ones (each file's rewrites in one load: esbuild runs one onLoad per file). */
export function oclifRewritten(extra = []) {
  const rewrites = [...OCLIF_REWRITES, DEBUG_ONLY_WHEN_ASKED, ...HELP_UTIL_IN_MAIN, ...UX_CALLS_LAZY, ...lazyRequireRewrites(), ...extra];
  return {
    name: 'oclif-without-startup-work',
    setup(b) {
      for (const source of new Set(rewrites.map((r) => r.file.source))) {
        b.onLoad({ filter: new RegExp(source) }, (args) => {
          let text = readFileSync(args.path, 'utf8');
          let resolveDir = path.dirname(args.path);
          for (const { from, to, resolveFrom, all } of rewrites.filter((r) => r.file.source === source)) {
            if (!text.includes(from)) throw new Error(`${args.path}: expected text not found (${from}); see scripts/esbuild-plugins.mjs`);
            text = all ? text.replaceAll(from, to) : text.replace(from, to);
            if (resolveFrom) resolveDir = path.dirname(createRequire(args.path).resolve(resolveFrom));
          }
          return { contents: text, loader: 'js', resolveDir };
        });
      }
    },
  };
}
export const oclifWithoutStartupWork = oclifRewritten();

/**
 * Node's built-in modules that podctl's commands do not all use at every start, each bundled as a
 * stand-in that requires the real module on first use of one of its exports. A `require()` of
 * `node:fs/promises` or `node:worker_threads` compiles Node's own JavaScript (~2-8 ms each, the
 * largest item of a start-up's CPU profile), and esbuild's CommonJS interop reading `node:util`'s
 * exports materialises its lazy ones (parse_args, diff, worker_threads…): a module whose top level
 * imports one of these now costs nothing until it calls it.
 *
 * The stand-in has the real module's export names (read from the Node.js that runs the build,
 * `builtinExportNames`), each a getter (and setter) forwarding to the real module; a name it does not
 * know (another Node.js version's) is forwarded by a Proxy. Modules whose export is a function
 * (events, stream, assert, module) are not in the list: they are used as classes at load time.
 */
export const LAZY_BUILTINS = [
  'util',
  'os',
  'fs/promises',
  'perf_hooks',
  'worker_threads',
  'timers/promises',
  'stream/promises',
  'readline',
  'readline/promises',
  'tty',
  'crypto',
  'http',
  'https',
  'http2',
  'net',
  'tls',
  'v8',
  'vm',
  'child_process',
  'zlib',
  'dns',
  'dns/promises',
  'string_decoder',
  'sea',
];

/** The export names of each of LAZY_BUILTINS in the Node.js `nodeBin` (default: the one running). */
export function builtinExportNames(nodeBin = process.execPath) {
  const script = `process.stdout.write(JSON.stringify(Object.fromEntries(${JSON.stringify(LAZY_BUILTINS)}.map((n) => { try { return [n, Object.getOwnPropertyNames(require('node:' + n))]; } catch { return [n, []]; } }))))`;
  return JSON.parse(execFileSync(nodeBin, ['-e', script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
}

/**
 * The plugin; `requiresOnly`: only `require()` calls (bundled CommonJS packages) get the stand-in, an
 * ES-module `import` of a built-in stays one (the ES-module build of dist/, whose chunks would
 * otherwise multiply).
 */
export function lazyBuiltins(exportNames, { requiresOnly = false } = {}) {
  return {
    name: 'lazy-builtins',
    setup(b) {
      const names = new Map(
        LAZY_BUILTINS.flatMap((n) => [
          [n, n],
          [`node:${n}`, n],
        ]),
      );
      // (the stand-in's own require of the real module stays Node's)
      b.onResolve({ filter: /^[a-z0-9:_/]+$/ }, (args) =>
        names.has(args.path) && args.namespace !== 'podctl-lazy-builtin' && (!requiresOnly || args.kind === 'require-call')
          ? { path: names.get(args.path), namespace: 'podctl-lazy-builtin' }
          : undefined,
      );
      b.onLoad({ filter: /.*/, namespace: 'podctl-lazy-builtin' }, (args) => ({
        contents: `let real;
const load = () => (real ??= require(${JSON.stringify(`node:${args.path}`)}));
const lazy = {};
for (const key of ${JSON.stringify(exportNames[args.path] ?? [])}) {
  Object.defineProperty(lazy, key, { enumerable: true, configurable: true, get: () => load()[key], set: (value) => { load()[key] = value; } });
}
module.exports = new Proxy(lazy, {
  get(target, key) {
    if (key in target) return target[key];
    if (key === '__esModule' || key === 'then') return undefined;
    return Reflect.get(load(), key);
  },
  set(_, key, value) {
    load()[key] = value;
    return true;
  },
  has: (target, key) => key in target || key in load(),
});`,
        loader: 'js',
        resolveDir: root,
      }));
    },
  };
}

/**
 * esbuild's CommonJS interop (`__copyProps`, which `__toESM` runs on every `import x from 'node:fs'`)
 * copies a module's exports as getters, asking each one's property descriptor for its
 * enumerability; on Node's built-in modules a descriptor materialises a lazy export (`node:fs`'s
 * `Dir` and `opendir` load internal/fs/dir at the script's first evaluation). The same enumerability,
 * asked with `propertyIsEnumerable`, reads no value. Returns `text` with every copy of the helper so
 * rewritten; none found (another esbuild's helper) fails the build.
 */
export function interopWithoutDescriptorReads(text, file) {
  let found = 0;
  const rewritten = text.replace(/enumerable:!\(([\w$]+)=[\w$]+\(([\w$]+),([\w$]+)\)\)\|\|\1\.enumerable/g, (_, _desc, from, key) => {
    found += 1;
    return `enumerable:Object.prototype.propertyIsEnumerable.call(${from},${key})`;
  });
  if (found === 0) throw new Error(`${file}: esbuild's __copyProps not found; see interopWithoutDescriptorReads in scripts/esbuild-plugins.mjs`);
  return rewritten;
}

/**
 * esbuild's `__toESM` makes a new copy of a CommonJS module's exports (a getter per export) at every
 * `import x from '…'` of it: the executable's `status` copied node:path, node:fs, oclif's modules… once
 * per importing module, ~400 KB of getters and property maps at every start. Rewritten, each module's
 * copy is made once (per interop mode) and served to its later importers while its exports keep
 * their count: the copy's getters read the live exports, so an importer sees the same values; a
 * module that gained exports since (a cycle's partly run module) is copied again, as before. Returns
 * `text` with the helper so rewritten; none found fails the build.
 */
export function interopCopiedOnce(text, file) {
  let found = 0;
  const rewritten = text.replace(
    /var ([\w$]+)=\(([\w$]+),([\w$]+),([\w$]+)\)=>(\(\4=\2!=null\?[\w$]+\([\w$]+\(\2\)\):\{\},[\w$]+\(\3\|\|!\2\|\|!\2\.__esModule\?[\w$]+\(\4,"default",\{value:\2,enumerable:!0\}\):\4,\2\)\))/g,
    (_, name, mod, nodeMode, target, body) => {
      found += 1;
      // the helper's own names only (`name$…`): the minified bundle's short names may be anything
      const [copies, count, copy, known] = [`${name}$copies`, `${name}$count`, `${name}$copy`, `${name}$known`];
      if (new RegExp(`(?<![\\w$])${name.replace(/\$/g, '\\$')}\\$(copies|count|copy|known)`).test(text)) throw new Error(`${file}: ${name}$… names taken; see interopCopiedOnce`);
      return (
        `var ${copies}=[new WeakMap,new WeakMap],${count}=m=>Object.getOwnPropertyNames(m).length,` +
        `${name}=(${mod},${nodeMode},${target})=>{if(${mod}==null||typeof ${mod}!="object"&&typeof ${mod}!="function")return${body};` +
        `let ${copy}=${copies}[${nodeMode}||!${mod}.__esModule?1:0],${known}=${copy}.get(${mod}),${count}Now=${count}(${mod});` +
        `if(${known}!==void 0&&${known}[0]===${count}Now)return ${known}[1];${target}=${body};${copy}.set(${mod},[${count}Now,${target}]);return ${target}}`
      );
    },
  );
  if (found === 0) throw new Error(`${file}: esbuild's __toESM not found; see interopCopiedOnce in scripts/esbuild-plugins.mjs`);
  return rewritten;
}
