/**
 * The watch screen as a kubectl/k9s user drives it, in a real terminal (tmux) against the embedded
 * CRI simulator, each at 80×24 and at 160×40: `-n` scoping and the banner when the runtime stops
 * answering (and comes back); long names that stay distinguishable, j/k, ⏎ for the explain view,
 * ctrl-k for kill, and a pod nobody drives marked `undriven` — with what each size shows (at 80
 * columns whole names before the other columns, header lines cut rather than wrapped; at 160 every
 * column and whole lines). Skipped, with the reason, without tmux or a build.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
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
if (skipReason) console.warn(`[watch-keys-tmux] SKIPPED: ${skipReason}`);

const server = `podctl-watch-keys-${process.pid}`;
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', server, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const terminal = (name: string) => tmuxTerminal(tmux, name);

function podctl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(root, 'bin/run.js'), ...args], { cwd: root, env: { ...process.env, NO_COLOR: '1' }, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

const LONG_NAMES = [
  'kube-system/kube-controller-manager-node-1',
  'kube-system/kube-controller-manager-node-2',
  'monitoring/prometheus-node-exporter-7x2kq',
  'monitoring/prometheus-node-exporter-9bqzd',
];

describe.skipIf(skipReason !== undefined)(`podctl watch keys, scope and banner${skipReason ? ` (skipped: ${skipReason})` : ''}`, { timeout: 90_000 }, () => {
  afterAll(() => {
    try {
      tmux('kill-server');
    } catch {
      // already gone
    }
  });

  describe.each(TMUX_SIZES)('at $cols×$rows', ({ cols, rows }) => {
    const size = ['-x', String(cols), '-y', String(rows)];
    let dir = '';
    let sim: RunningSimulator | undefined;
    const drivers: number[] = [];
    let common = '';

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'podctl-watch-keys-'));
      sim = await startSimulator({
        socketPath: join(dir, 'sim.sock'),
        timeScale: 0.05,
        pods: [
          { name: 'kube-controller-manager-node-1', namespace: 'kube-system', terminationGracePeriodSeconds: 30 },
          { name: 'kube-controller-manager-node-2', namespace: 'kube-system', terminationGracePeriodSeconds: 30 },
          { name: 'prometheus-node-exporter-7x2kq', namespace: 'monitoring', terminationGracePeriodSeconds: 30 },
          { name: 'prometheus-node-exporter-9bqzd', namespace: 'monitoring', terminationGracePeriodSeconds: 30 },
          { name: 'api-1', namespace: 'web', terminationGracePeriodSeconds: 600, containers: [{ name: 'app', onSigterm: 'ignore' }] },
          { name: 'api-2', namespace: 'web', terminationGracePeriodSeconds: 30 },
        ],
      });
      common = `--runtime-endpoint ${sim.endpoint} --state-dir ${join(dir, 'state')} --node test-node`;
    });

    afterAll(async () => {
      for (const name of [`wide-${cols}`, `small-${cols}`]) {
        try {
          tmux('kill-session', '-t', name);
        } catch {
          // already gone
        }
      }
      for (const pid of drivers) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
      await sim?.close();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it('-n shows one namespace; a banner when the runtime stops answering, gone when it answers', async () => {
      tmux('new-session', '-d', '-s', `wide-${cols}`, ...size, '-c', root, `NO_COLOR=1 node bin/run.js watch -n web ${common}; echo "EXIT=$?"; sleep 60`);
      const t = terminal(`wide-${cols}`);
      const first = await t.until((s) => rowOf(s, 'web/api-1') !== undefined && rowOf(s, 'web/api-2') !== undefined, 'the web pods');
      expect(first).not.toContain('kube-system/');
      expect(first).not.toContain('monitoring/');
      // the scope is in the header where the width leaves room for it after the endpoint
      if (cols === 160) expect(first).toContain('namespace web · 2/2 pods');
      else expect(first.split('\n')[0]).toMatch(/^podctl watch · node test-node · unix:\/\/.*…$/);

      sim!.setFaults([{ method: '*', delayMs: 600_000 }]);
      // bounded only against a hang; how soon it shows is a speed goal, not asserted here
      const down = await t.until((s) => s.includes('runtime not answering'), 'the banner', 10_000);
      // the banner takes the counts line's place, one line: whole at 160, cut at 80
      const banner = down.split('\n')[1] ?? '';
      if (cols === 160) expect(banner).toMatch(/^⚠ runtime not answering for \d+s: no answer within the probe deadline · the table shows the last listing$/);
      else expect(banner).toMatch(/^⚠ runtime not answering for \d+s: no answer within the probe deadline .*…$/);
      expect(banner.length).toBeLessThanOrEqual(cols);
      expect(down).toMatch(/runtime-not-answering: the runtime at unix:\/\/\S+/);
      // the last listing stays on screen
      expect(onOneLine(down, 'web/api-1', cols)).toBe(true);

      sim!.setFaults([]);
      const back = await t.until((s) => !s.includes('⚠ runtime not answering') && s.includes('runtime-answering'), 'the banner gone', 10_000);
      expect(back).toMatch(/runtime-answering: the runtime answers again/);
      if (cols === 160) expect(back).toMatch(/runtime-answering: the runtime answers again \(after \d+s without an answer\)/);
      // the counts line is back in the banner's place
      const counts = back.split('\n')[1] ?? '';
      if (cols === 160) expect(counts).toBe('sync 0  terminating 0  terminated 0 │ desired 0  orphan 0  runtime-only 0 │ untracked 2 │ kubelet down');
      else expect(counts).toMatch(/^sync 0 +terminating 0 +terminated 0 │ desired 0 +orphan 0 +runtime-only 0 │ unt…$/);
      t.keys('q');
    });

    it('whole names, j/k, ⏎ explain, ctrl-k kill prompt, and an undriven pod marked', async () => {
      // a kill that times out hands web/api-1 to a background driver; killing the driver leaves it undriven
      const kill = await podctl(['kill', 'web/api-1', '--grace', '600', '--timeout', '1s', ...common.split(' ')]);
      const pid = Number(/handed to background podctl pid (\d+)/.exec(kill.stderr)?.[1]);
      expect(pid, kill.stderr).toBeGreaterThan(0);
      drivers.push(pid);
      process.kill(pid, 'SIGKILL');

      tmux('new-session', '-d', '-s', `small-${cols}`, ...size, '-c', root, `NO_COLOR=1 node bin/run.js watch ${common}; echo "EXIT=$?"; sleep 60`);
      const t = terminal(`small-${cols}`);
      const screen = await t.until((s) => rowOf(s, 'kube-system/kube-controller-manager-node-2') !== undefined && /web\/api-1 +terminating +undriven/.test(s), 'the table');
      // every name whole, on one line of its own: the replicas are told apart at either width
      for (const name of [...LONG_NAMES, 'web/api-1', 'web/api-2']) expect(onOneLine(screen, name, cols), name).toBe(true);
      for (const line of screen.split('\n')) expect(line.length).toBeLessThanOrEqual(cols);
      // no countdown for the undriven pod
      expect(rowOf(screen, 'web/api-1')).not.toMatch(/[█░]/);
      const titles = screen.split('\n').find((l) => l.includes('NAMESPACE/NAME'))!;
      if (cols === 80) {
        // the names take the room: the owner and the last error give way
        expect(titles).toMatch(/NAMESPACE\/NAME +STATE +GRACE +CTRS +IN STATE$/);
      } else {
        expect(titles).toMatch(/NAMESPACE\/NAME +STATE +GRACE +CTRS +IN STATE +OWNER +LAST ERROR$/);
        // whoever drives web/api-1: nobody (its driver was killed)
        expect(rowOf(screen, 'web/api-1')).toMatch(/terminating +undriven +\S+ +\S+ +-/);
      }

      // sorted by state: web/api-1 (terminating) first and selected; j moves down, k back up
      const selected = (s: string) =>
        s
          .split('\n')
          .find((l) => l.startsWith('▶ '))
          ?.slice(2)
          .split(/\s+/)[0];
      expect(selected(screen)).toBe('web/api-1');
      t.keys('j');
      const down = await t.until((s) => selected(s) !== 'web/api-1', 'j to move down');
      const second = selected(down);
      t.keys('j');
      await t.until((s) => selected(s) !== second, 'j again');
      t.keys('k');
      await t.until((s) => selected(s) === second, 'k to move up');
      t.keys('k');
      await t.until((s) => selected(s) === 'web/api-1', 'k back to the top');

      // ⏎: the explain view of the selected pod; any other key goes back
      t.keys('Enter');
      const explain = await t.until((s) => s.includes('explain web/api-1'), 'the explain view');
      expect(explain).toContain('waiting for:');
      expect(explain).toContain('blocked by:   undriven');
      expect(explain).toContain('next step:');
      for (const line of explain.split('\n')) expect(line.length).toBeLessThanOrEqual(cols);
      t.keys('Escape');
      await t.until((s) => s.includes('NAMESPACE/NAME'), 'the table again');

      // plain k never kills; ctrl-k asks the grace
      t.keys('C-k');
      await t.until((s) => s.includes('Kill web/api-1 — grace seconds'), 'the kill prompt');
      t.keys('Escape');
      await t.until((s) => s.includes('cancelled'), 'cancelled');
      t.keys('q');
    });
  });
});
