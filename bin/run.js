#!/usr/bin/env node
// podctl entry point, CommonJS (bin/package.json) so that start-up does not wait for the ES-module
// loader: dist/boot.cjs (src/boot.ts, built by `npm run build`) runs the CLI from one bundled script
// compiled with a V8 code cache; oclif reads the generated oclif.manifest.json.
require('../dist/boot.cjs').boot(__filename);
