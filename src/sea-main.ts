/**
 * The single executable's main script (scripts/sea.mjs): what Node.js compiles at every start is
 * only this. podctl itself is the executable's `podctl.cjs` (src/sea.ts bundled), compiled here with
 * V8's code cache made after a run of the command at build time (`podctl-<command>.v8`: the functions
 * that command ran are in it, compiled), or for another command with the cache made after `--help`
 * (`podctl.v8`).
 *
 * Invariant: a missing or rejected cache means compiling from source, never a failure (src/sea-assets.ts).
 */
import { runAsset } from './sea-assets.js';

/** A command word usable in an asset name (anything else uses the common cache). */
const COMMAND = /^[a-z][a-z0-9-]{0,39}$/;
/** Commands that run from another command's trained cache (scripts/sea.mjs, `TRAINING`): the same path. */
const CACHE_OF: Readonly<Record<string, string>> = { evict: 'kill' };

const argv = process.argv.slice(2);
const command = argv[0];
const cacheOf = command !== undefined && Object.hasOwn(CACHE_OF, command) ? CACHE_OF[command] : command;
const caches = cacheOf !== undefined && COMMAND.test(cacheOf) ? [`podctl-${cacheOf}.v8`, 'podctl.v8'] : ['podctl.v8'];
const podctl = runAsset('podctl', caches) as { start(argv: string[]): Promise<void> };
void podctl.start(argv);
