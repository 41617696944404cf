/**
 * deploy/systemd/podctl-shutdown-guard.service: what the guard needs of its unit — stopped before
 * containerd, SIGTERM to podctl alone, a stop timeout above the fallback drain's bound — and every
 * flag it passes is one `podctl agent` takes (docs/cli-contract.json).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../src/lib/duration.js';

const UNIT = readFileSync(path.join(process.cwd(), 'deploy', 'systemd', 'podctl-shutdown-guard.service'), 'utf8');
const CONTRACT = JSON.parse(readFileSync(path.join(process.cwd(), 'docs', 'cli-contract.json'), 'utf8')) as { commands: Record<string, { flags: Record<string, unknown> }> };

function settings(key: string): string[] {
  return [...UNIT.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => m[1]!.trim());
}

describe('podctl-shutdown-guard.service', () => {
  it('is ordered after containerd (so stopped before it) and SIGTERMs podctl alone', () => {
    expect(settings('After').join(' ').split(/\s+/)).toContain('containerd.service');
    expect(settings('KillMode')).toEqual(['mixed']);
  });

  it('runs the agent with the guard, flags it knows, and a stop timeout above the fallback bound', () => {
    const [exec] = settings('ExecStart');
    const args = exec!.split(/\s+/);
    expect(args.slice(1, 3)).toEqual(['agent', '--shutdown-guard']);
    const flags = args.filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')[0]!);
    for (const flag of flags) expect(Object.keys(CONTRACT.commands.agent!.flags), flag).toContain(flag);
    const stopTimeout = parseDuration(args[args.indexOf('--shutdown-stop-timeout') + 1]!, 'shutdown-stop-timeout');
    expect(parseDuration(settings('TimeoutStopSec')[0]!, 'TimeoutStopSec')).toBeGreaterThan(stopTimeout);
  });
});
