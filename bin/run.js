#!/usr/bin/env node
// podctl entry point: the bundled CLI (dist/cli.js, built by `npm run build`) runs oclif, which reads
// the generated oclif.manifest.json, so only the invoked command loads.
import { run } from '../dist/cli.js';

await run(import.meta.url);
