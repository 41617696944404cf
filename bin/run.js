#!/usr/bin/env node
// podctl entry point: oclif reads the generated oclif.manifest.json, so only the invoked command loads.
import { execute } from '@oclif/core';

await execute({ dir: import.meta.url });
