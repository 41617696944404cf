import { execFileSync, spawnSync } from 'node:child_process';
import { describe, expect, it, vi } from 'vitest';
import { followerTierUpFlag, tierUpLikeAFollower } from '../../src/base/tier-up.js';

/**
 * Calls a small function until V8's optimizing compiler has it (compiled on the main thread, so the
 * count is exact) and prints how many calls that took; with a flag, sets it first the way podctl does
 * (after start, through node:v8).
 */
const CALLS_UNTIL_OPTIMIZED = `
const flag = process.argv[1];
if (flag) require('node:v8').setFlagsFromString(flag);
function work(a, b) { let s = a; for (let i = 0; i < 8; i++) s = (s * 31 + b + i) | 0; return s; }
function driver(n) { let s = 0; for (let i = 0; i < n; i++) s ^= work(i, s); return s; }
%NeverOptimizeFunction(driver);
let calls = 0;
while (calls < 1e6 && !(%GetOptimizationStatus(work) & 64)) { driver(20); calls += 20; }
process.stdout.write(String(calls));
`;

function callsUntilOptimized(flag?: string): { calls: number; stderr: string } {
  const args = ['--allow-natives-syntax', '--no-concurrent-recompilation', '-e', CALLS_UNTIL_OPTIMIZED, ...(flag ? [flag] : [])];
  const run = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 30_000 });
  expect(run.status).toBe(0);
  return { calls: Number(run.stdout), stderr: run.stderr };
}

describe('a follower tiers up later', () => {
  it('sets four times the interrupt budget on V8 11 (Node.js 20) and nothing on V8 13 and 14 (Node.js 24, 26)', () => {
    expect(followerTierUpFlag('11.3.244.8-node.38')).toBe('--interrupt-budget=270336');
    expect(followerTierUpFlag('13.6.233.17-node.53')).toBeUndefined();
    expect(followerTierUpFlag('14.6.202.34-node.34')).toBeUndefined();
    expect(followerTierUpFlag('')).toBeUndefined();
    const set = vi.fn();
    expect(tierUpLikeAFollower('11.3.244.8-node.38', set)).toBe('--interrupt-budget=270336');
    expect(set).toHaveBeenCalledExactlyOnceWith('--interrupt-budget=270336');
    set.mockClear();
    expect(tierUpLikeAFollower('14.6.202.34-node.34', set)).toBeUndefined();
    expect(set).not.toHaveBeenCalled();
  });

  it('on this Node.js: the flag is one its V8 knows (none where V8 has no budget flag), set after start it delays optimizing four times, and prints nothing', () => {
    const flag = followerTierUpFlag(process.versions.v8);
    const known = execFileSync(process.execPath, ['--v8-options'], { encoding: 'utf8' });
    if (flag === undefined) {
      // Node.js 24 and 26: the budget flag is gone (setting it would print an error)
      expect(known).not.toContain('  --interrupt-budget ');
      return;
    }
    expect(known).toContain(`  ${flag.slice(0, flag.indexOf('='))} `);
    const before = callsUntilOptimized();
    const after = callsUntilOptimized(flag);
    expect(before.calls).toBeGreaterThan(0);
    expect(after.calls).toBeGreaterThanOrEqual(3 * before.calls);
    expect(after.stderr).toBe('');
  });
});
