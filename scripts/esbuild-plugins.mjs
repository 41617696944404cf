/**
 * esbuild plugins shared by scripts/build.mjs (dist/) and scripts/sea.mjs (the single executable).
 */
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');

/**
 * @oclif/core requires some packages when it loads but uses them only on paths `podctl status` and
 * the other commands do not take (rendering help templates, globbing for commands when there is no
 * manifest, plugin matching, spinners). Each is replaced, inside oclif only, by a stand-in that
 * loads the real (bundled) package on first use; CommonJS interop (`__importDefault`) sees the same
 * exports as before.
 */
const LAZY_IN_OCLIF = ['ejs', 'tinyglobby', 'minimatch', 'cli-spinners'];
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
