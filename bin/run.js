#!/usr/bin/env -S node --max-semi-space-size=4
// podctl entry point, CommonJS (bin/package.json) so that start-up does not wait for the ES-module
// loader: dist/boot.cjs (src/boot.ts, built by `npm run build`) runs the CLI from one bundled script
// compiled with a V8 code cache; oclif reads the generated oclif.manifest.json.
//
// The line above is podctl's Node.js flags, for the `podctl` of an npm install and (read from here by
// scripts/sea.mjs) for the single executable; `podctl version` shows them. --max-semi-space-size=4:
// V8's young generation stays within 2 × 4 MB. By default it grows to 32 MB on Node.js 20 and to
// 64-128 MB on 24 and 26 under a drain's allocation and keeps it: a watch that follows a 500-pod
// drain peaked 20-40 MB higher. 2 × 2 MB (the flag until 27 Nov 2026) cost the screen of `watch`
// CPU: over a 500-pod drain 16.4 % of a core against 14.2 % with 2 × 4 MB (five runs each, side by
// side), for a peak of 145 MB instead of 120 (2 × 8 MB: 13.0 % in three runs, but a peak of 152 MB).
// `watch -o json` and the drain alone took the same within their spread (docs/benchmarks.md,
// fourteenth step).
// `env -S` needs GNU coreutils 8.30 or later (Debian 10, RHEL 8); `node bin/run.js` runs without flags.
require('../dist/boot.cjs').boot(__filename);
