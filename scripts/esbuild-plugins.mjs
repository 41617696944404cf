/**
 * esbuild plugins shared by scripts/build.mjs (dist/) and scripts/sea.mjs (the single executable).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');

/**
 * @oclif/core requires some packages when it loads but uses them only on paths `podctl status` and
 * the other commands do not take (rendering help templates, globbing for commands when there is no
 * manifest, plugin matching, spinners; Node's child_process for the shell of a Windows user, and
 * readline for a `-` argument read from stdin). Each is replaced, inside oclif only, by a stand-in
 * that loads the real (bundled) package, or Node's module, on first use; CommonJS interop
 * (`__importDefault`) sees the same exports as before.
 */
const LAZY_IN_OCLIF = ['ejs', 'tinyglobby', 'minimatch', 'cli-spinners', 'node:child_process', 'node:readline'];
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
 * - the platform check imports wsl-utils for `isWsl`, and wsl-utils requires Node's child_process
 *   when it loads: oclif gets `isWsl` from is-wsl (what wsl-utils exports) and wsl-utils on first
 *   use of anything else.
 * Each rewrite must find its text: an @oclif/core that changed fails the build instead of silently
 * keeping the cost.
 */
const OCLIF_REWRITES = [
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
];
export const oclifWithoutStartupWork = {
  name: 'oclif-without-startup-work',
  setup(b) {
    for (const { file, from, to, resolveFrom } of OCLIF_REWRITES) {
      b.onLoad({ filter: file }, (args) => {
        const source = readFileSync(args.path, 'utf8');
        if (!source.includes(from)) throw new Error(`${args.path}: expected text not found (${from}); see scripts/esbuild-plugins.mjs`);
        const resolveDir = resolveFrom ? path.dirname(createRequire(args.path).resolve(resolveFrom)) : path.dirname(args.path);
        return { contents: source.replace(from, to), loader: 'js', resolveDir };
      });
    }
  },
};
