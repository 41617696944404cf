#!/usr/bin/env -S node --max-semi-space-size=4
// podctl entry point, CommonJS (bin/package.json) so that start-up does not wait for the ES-module
// loader: dist/boot.cjs (src/boot.ts, built by `npm run build`) runs the CLI from one bundled script
// compiled with a V8 code cache; oclif reads the generated oclif.manifest.json.
//
// The line above is podctl's Node.js flags, for the `podctl` of an npm install and (read from here by
// scripts/sea.mjs) for the single executable; `podctl version` shows them. --max-semi-space-size=4:
// V8's young generation stays within 2 × 4 MB instead of growing under a drain's allocation and
// keeping it (the sizes tried and their figures: docs/benchmarks.md, fourteenth step, and "Issue 41:
// figures that were in code comments"). Only flags that leave V8's flag hash as Node.js's own (on
// Node.js 22+; Node.js 20's V8 counts this one too): with another (--expose-gc was one), V8 rejects
// the code cache Node.js carries for its modules and every command compiles those it loads from
// source (src/lib/heap-settle.ts gets V8's gc at run time instead; docs/bench/startup.md, issue 48).
// `env -S` needs GNU coreutils 8.30 or later (Debian 10, RHEL 8); `node bin/run.js` runs without flags.
require('../dist/boot.cjs').boot(__filename);
