#!/usr/bin/env -S node --max-semi-space-size=4 --expose-gc
// podctl entry point, CommonJS (bin/package.json) so that start-up does not wait for the ES-module
// loader: dist/boot.cjs (src/boot.ts, built by `npm run build`) runs the CLI from one bundled script
// compiled with a V8 code cache; oclif reads the generated oclif.manifest.json.
//
// The line above is podctl's Node.js flags, for the `podctl` of an npm install and (read from here by
// scripts/sea.mjs) for the single executable; `podctl version` shows them. --max-semi-space-size=4:
// V8's young generation stays within 2 × 4 MB instead of growing under a drain's allocation and
// keeping it (the sizes tried and their figures: docs/benchmarks.md, fourteenth step, and "Issue 41:
// figures that were in code comments"). --expose-gc: the watch gives the heap a drain made it grow
// back to the system once the burst is over (src/lib/heap-settle.ts); nothing sets it at run time.
// `env -S` needs GNU coreutils 8.30 or later (Debian 10, RHEL 8); `node bin/run.js` runs without flags.
require('../dist/boot.cjs').boot(__filename);
