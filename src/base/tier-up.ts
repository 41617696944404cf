/**
 * How eagerly V8 optimizes a long-running follower's code (the watch): its work comes in bursts (a
 * drain of hundreds of pods for a few seconds, then quiet), and V8's optimizing compiler, which by
 * default takes a function once it has run its interrupt budget of bytecode, spends a burst
 * compiling code that goes cold right after. On Node.js 20 (V8 11.3) the follower's budget is four
 * times the default; Node.js 24 and 26 (V8 13.6 and 14.6) tier up by invocation counts, through
 * Maglev first, and keep their defaults. What it saves and where it does not help:
 * docs/bench/history.md, "Seventh step" and "Issue 41: figures that were in code comments".
 *
 * Invariants:
 * - Only a flag the running V8 knows is ever set (an unknown one prints an error on stderr), and only
 *   for the process that asks (the flag is not passed to child processes).
 * - Code already optimized stays optimized; the flag only delays what tiers up from now on.
 */
import { setFlagsFromString } from 'node:v8';

/** V8's default interrupt budget on Node.js 20 (V8 11.3), in bytes of bytecode. */
const V8_11_INTERRUPT_BUDGET = 66 * 1024;
/** How much later a follower's code tiers up. */
const FOLLOWER_FACTOR = 4;

/** The flag a follower sets on the V8 of `v8Version` (`process.versions.v8`), or undefined for none. */
export function followerTierUpFlag(v8Version: string): string | undefined {
  const major = Number.parseInt(v8Version, 10);
  if (major !== 11) return undefined;
  return `--interrupt-budget=${V8_11_INTERRUPT_BUDGET * FOLLOWER_FACTOR}`;
}

/** Makes this process's code tier up later (see the module comment); returns the flag set, if any. */
export function tierUpLikeAFollower(v8Version = process.versions.v8, set: (flag: string) => void = setFlagsFromString): string | undefined {
  const flag = followerTierUpFlag(v8Version);
  if (flag !== undefined) set(flag);
  return flag;
}
