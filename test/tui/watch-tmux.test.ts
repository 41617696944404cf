/**
 * The real `podctl watch` (the built CLI, bin/run.js) in a real terminal (tmux) against the embedded
 * CRI simulator, at 80×24 and at 160×40: select a pod, filter, kill it with a grace typed at the
 * prompt, confirm, see the transition on screen, quit — and at each size what the screen holds (at
 * 80 columns every pod on one whole line, the header cut rather than wrapped, the last-error column
 * left out; at 160 every column and the whole help line). Skipped, with the reason, when tmux or the
 * build is missing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { TMUX_SIZES, onOneLine, rowOf, tmuxTerminal } from './support/tmux.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const hasTmux = spawnSync('tmux', ['-V']).status === 0;
const built = existsSync(join(root, 'dist/commands/watch.js')) && existsSync(join(root, 'oclif.manifest.json'));
const skipReason = !hasTmux ? 'tmux is not installed' : !built ? 'podctl is not built (run `npm run build`)' : undefined;
if (skipReason) console.warn(`[watch-tmux] SKIPPED: ${skipReason}`);

const server = `podctl-watch-test-${process.pid}`;
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', server, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const PODS = ['web/api-1', 'web/api-2', 'batch/report'];

describe.skipIf(skipReason !== undefined)(`podctl watch in a terminal${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  afterAll(() => {
    try {
      tmux('kill-server');
    } catch {
      // already gone
    }
  });

  describe.each(TMUX_SIZES)('at $cols×$rows', ({ cols, rows }) => {
    const session = `watch-${cols}x${rows}`;
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
      const cmd = `NO_COLOR=1 node bin/run.js watch --runtime-endpoint ${sim.endpoint} --state-dir ${join(dir, 'state')} --node test-node; echo "EXIT=$?"; sleep 60`;
      tmux('new-session', '-d', '-s', session, '-x', String(cols), '-y', String(rows), '-c', root, cmd);
    });

    afterAll(async () => {
      try {
        tmux('kill-session', '-t', session);
      } catch {
        // already gone
      }
      await sim?.close();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it('selects, kills with a typed grace after confirmation, shows the transition, and quits', async () => {
      const t = tmuxTerminal(tmux, session);
      const first = await t.until((s) => PODS.every((p) => rowOf(s, p) !== undefined), 'the pod table');
      expect(first).toMatch(/^podctl watch · node test-node/);
      expect(first).toMatch(/▶ \S+/);
      // every pod on one line of its own, its whole name first, within the terminal's width
      for (const pod of PODS) expect(onOneLine(first, pod, cols), pod).toBe(true);
      const titles = first.split('\n').find((l) => l.includes('NAMESPACE/NAME'))!;
      if (cols === 80) {
        // the header lines are cut (…) instead of wrapping; the last error gives way to the name
        expect(first.split('\n')[0]).toMatch(/…$/);
        expect(first.split('\n')[1]).toMatch(/^sync 0 +terminating 0 +terminated 0 │ desired 0 .*…$/);
        expect(titles).toMatch(/NAMESPACE\/NAME +STATE +GRACE +CTRS +IN STATE +OWNER/);
        expect(titles).not.toContain('LAST ERROR');
        expect(first).not.toContain('q quit');
      } else {
        expect(first.split('\n')[0]).toMatch(/3\/3 pods · sort state$/);
        expect(first.split('\n')[1]).toMatch(/│ untracked 3/);
        expect(titles).toMatch(/NAMESPACE\/NAME +STATE +GRACE +CTRS +IN STATE +OWNER +LAST ERROR/);
        expect(first).toMatch(/↑\/↓ j\/k select · .* · q quit/);
      }

      // ↓ moves the selection to the next row.
      const selectedBefore = /▶ (\S+)/.exec(first)![1];
      t.keys('Down');
      const moved = await t.until((s) => /▶ (\S+)/.exec(s)?.[1] !== selectedBefore, 'the selection to move');
      expect(/▶ (\S+)/.exec(moved)![1]).not.toBe(selectedBefore);

      // Filter down to web/api-1 (which ignores SIGTERM, so it stays terminating for its grace).
      t.keys('/');
      t.keys('-l', 'web/api-1');
      t.keys('Enter');
      const filtered = await t.until((s) => rowOf(s, 'web/api-2') === undefined && rowOf(s, 'batch/report') === undefined && rowOf(s, 'web/api-1') !== undefined, 'the filter');
      // at 160 the header says so; at 80 the endpoint takes the header's width, the table shows it
      if (cols === 160) expect(filtered).toContain('1/3 pods · sort state · filter "web/api-1"');

      // ctrl-k asks the grace; type 3 over the default; enter asks for confirmation; y kills.
      t.keys('C-k');
      await t.until((s) => s.includes('Kill web/api-1 — grace seconds'), 'the grace prompt');
      t.keys('BSpace', 'BSpace', 'BSpace', '3');
      t.keys('Enter');
      await t.until((s) => s.includes('Kill web/api-1 with grace 3s? [y/N]'), 'the confirmation');
      t.keys('y');
      const killed = await t.until(
        (s) => /web\/api-1\s+terminating\s+█+░* \ds/.test(s) && s.includes('kill web/api-1 grace 3s: driven here'),
        'web/api-1 terminating with its countdown bar, and the kill acknowledged',
      );
      expect(killed).toMatch(/termination-requested: kill, grace 3s/);
      expect(killed).toMatch(/terminating 1 /);
      expect(onOneLine(killed, 'web/api-1', cols)).toBe(true);

      // The grace runs out: SIGKILL, and the pod moves on.
      await t.until((s) => /web\/api-1\s+(terminated|finished)/.test(s), 'web/api-1 terminated after its grace', 20_000);

      t.keys('q');
      const after = await t.until((s) => s.includes('EXIT='), 'the command to exit');
      expect(after).toContain('EXIT=0');
    });
  });
});
