// Lets `node --import ./bench/register.mjs bench/x.bench.ts` run TypeScript benchmarks directly.
import { register } from 'tsx/esm/api';
register();
