/**
 * The real `podctl watch` (the built CLI, bin/run.js) in a real terminal (tmux) against the embedded
 * CRI simulator: select a pod, filter, kill it with a grace typed at the prompt, confirm, see the
 * transition on screen, quit. Skipped, with the reason, when tmux or the build is missing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const hasTmux = spawnSync('tmux', ['-V']).status === 0;
const built = existsSync(join(root, 'dist/commands/watch.js')) && existsSync(join(root, 'oclif.manifest.json'));
const skipReason = !hasTmux ? 'tmux is not installed' : !built ? 'podctl is not built (run `npm run build`)' : undefined;
if (skipReason) console.warn(`[watch-tmux] SKIPPED: ${skipReason}`);

const server = `podctl-watch-test-${process.pid}`;
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', server, ...args], { encoding: 'utf8' });
const screen = () => tmux('capture-pane', '-p', '-t', 'watch');
const keys = (...k: string[]) => tmux('send-keys', '-t', 'watch', ...k);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls the terminal until `predicate` holds (bounded); returns that screen. */
async function until(predicate: (s: string) => boolean, what: string, timeoutMs = 15_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    last = screen();
    if (predicate(last)) return last;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}; screen:\n${last}`);
}

describe.skipIf(skipReason !== undefined)(`podctl watch in a terminal${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  let dir = '';
  let sim: RunningSimulator | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'podctl-watch-tmux-'));
    sim = await startSimulator({
      socketPath: join(dir, 'sim.sock'),
      pods: [
        { name: 'api-1', namespace: 'web', terminationGracePeriodSeconds: 30, containers: [{ name: 'app', onSigterm: 'ignore' }] },
        { name: 'api-2', namespace: 'web', terminationGracePeriodSeconds: 30 },
        { name: 'report', namespace: 'batch', terminationGracePeriodSeconds: 60 },
      ],
    });
    const cmd = `node bin/run.js watch --runtime-endpoint ${sim.endpoint} --state-dir ${join(dir, 'state')} --node test-node; echo "EXIT=$?"; sleep 60`;
    tmux('new-session', '-d', '-s', 'watch', '-x', '140', '-y', '36', '-c', root, cmd);
  });

  afterAll(async () => {
    try {
      tmux('kill-server');
    } catch {
      // already gone
    }
    await sim?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('selects, kills with a typed grace after confirmation, shows the transition, and quits', async () => {
    const first = await until((s) => s.includes('NAMESPACE/NAME') && s.includes('3/3 pods'), 'the pod table');
    expect(first).toContain('podctl watch · node test-node');
    expect(first).toMatch(/untracked 3/);
    expect(first).toMatch(/▶ \S+/);

    // ↓ moves the selection to the next row.
    const selectedBefore = /▶ (\S+)/.exec(first)![1];
    keys('Down');
    const moved = await until((s) => /▶ (\S+)/.exec(s)?.[1] !== selectedBefore, 'the selection to move');
    expect(/▶ (\S+)/.exec(moved)![1]).not.toBe(selectedBefore);

    // Filter down to web/api-1 (which ignores SIGTERM, so it stays terminating for its grace).
    keys('/');
    keys('-l', 'web/api-1');
    keys('Enter');
    await until((s) => s.includes('1/3 pods') && s.includes('filter "web/api-1"'), 'the filter');

    // ctrl-k asks the grace; type 5 over the default; enter asks for confirmation; y kills.
    keys('C-k');
    await until((s) => s.includes('Kill web/api-1 — grace seconds'), 'the grace prompt');
    keys('BSpace', 'BSpace', 'BSpace', '5');
    keys('Enter');
    await until((s) => s.includes('Kill web/api-1 with grace 5s? [y/N]'), 'the confirmation');
    keys('y');
    const killed = await until(
      (s) => /web\/api-1\s+terminating\s+█+░* \ds/.test(s) && s.includes('kill web/api-1 grace 5s: driven here'),
      'web/api-1 terminating with its countdown bar, and the kill acknowledged',
    );
    expect(killed).toMatch(/termination-requested: kill, grace 5s/);
    expect(killed).toMatch(/terminating 1 /);

    // The grace runs out: SIGKILL, and the pod moves on.
    await until((s) => /web\/api-1\s+(terminated|finished)/.test(s), 'web/api-1 terminated after its grace', 20_000);

    keys('q');
    const after = await until((s) => s.includes('EXIT='), 'the command to exit');
    expect(after).toContain('EXIT=0');
  });
});
