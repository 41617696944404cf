#!/usr/bin/env -S node --max-semi-space-size=2
// podctl entry point, CommonJS (bin/package.json) so that start-up does not wait for the ES-module
// loader: dist/boot.cjs (src/boot.ts, built by `npm run build`) runs the CLI from one bundled script
// compiled with a V8 code cache; oclif reads the generated oclif.manifest.json.
//
// The line above is podctl's Node.js flags, for the `podctl` of an npm install and (read from here by
// scripts/sea.mjs) for the single executable; `podctl version` shows them. --max-semi-space-size=2:
// V8's young generation stays within 2 × 2 MB. By default it grows to 32 MB on Node.js 20 and to
// 64-128 MB on 24 and 26 under a drain's allocation and keeps it: a watch that follows a 500-pod
// drain peaked 20-40 MB higher. A drain's own CPU is the same within its spread (docs/benchmarks.md).
// `env -S` needs GNU coreutils 8.30 or later (Debian 10, RHEL 8); `node bin/run.js` runs without flags.
require('../dist/boot.cjs').boot(__filename);
