/**
 * A full disk under the state dir (a 1 MiB tmpfs) on the real containerd. Write-ahead means what it
 * says: a pod whose kill cannot be written is not touched (no SIGTERM), reported failed with its
 * own file, exit 1; once space is back the same kill works. A disk that fills mid-kill does not
 * kill podctl (no unhandled rejection): the kills already on disk go on to SIGKILL within grace
 * + 2 s, and the next run, with space back, finishes every pod and leaves nothing terminating.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { describeContainerd } from './support/env.js';
import { useContainerd } from './support/context.js';
import { collect, requireBuild, runPodctl, spawnPodctl } from './support/cli.js';
import { exitInfo, firstSigterm, sigterms } from './support/observe.js';
import { waitFor } from '../support/wait.js';

interface KillJson {
  status: string;
  pods: { uid: string; name: string; outcome: string; error?: string }[];
}

const isRoot = process.getuid?.() === 0;

describeContainerd(import.meta.url, 'a full disk under the state dir (containerd, tmpfs)', () => {
  const node = useContainerd();
  let mount: string;
  let stateDir: string;
  let filler: string;

  /** Fills the tmpfs: every later write there fails with ENOSPC. */
  const fill = (): void => {
    try {
      execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=4096'], { stdio: 'ignore' });
    } catch {
      // dd ends with "No space left on device": that is the point
    }
  };
  const free = (): void => rmSync(filler, { force: true });

  beforeAll(() => requireBuild());
  beforeEach(() => {
    if (!isRoot) return;
    mount = mkdtempSync(join(tmpdir(), 'podctl-e2e-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', mount]);
    stateDir = join(mount, 'state');
    filler = join(mount, 'fill');
    mkdirSync(stateDir, { mode: 0o700 });
  });
  afterEach(() => {
    if (!isRoot || !mount) return;
    execFileSync('umount', ['-l', mount]);
    rmSync(mount, { recursive: true, force: true });
  });

  it.skipIf(!isRoot)(
    'full before the kill: nothing is done to any pod, each failure names its own file, exit 1; with space back the kill works',
    async () => {
      const pods = await Promise.all(['full-a', 'full-b', 'full-c'].map((name) => node.pods.create({ name, terminationGracePeriodSeconds: 5 })));
      const endpoint = `unix://${node.socket}`;
      // the state dir's folders exist (a first read), then the disk fills but for three pages: the
      // three leases still fit, the checkpoints (the kills' write-ahead) do not
      expect((await runPodctl(['status', '--json'], { endpoint, stateDir })).code).toBe(0);
      const reserve = join(mount, 'reserve');
      execFileSync('dd', ['if=/dev/zero', `of=${reserve}`, 'bs=4096', 'count=3'], { stdio: 'ignore' });
      fill();
      rmSync(reserve);
      const refs = pods.map((p) => `${p.namespace}/${p.name}`);
      const kill = await runPodctl(['kill', ...refs, '--grace', '5', '--json'], { endpoint, stateDir, timeoutMs: 60_000 });
      expect(kill.code, kill.stderr).toBe(1);
      const result = JSON.parse(kill.stdout) as KillJson;
      expect(result.pods).toHaveLength(3);
      for (const pod of pods) {
        const entry = result.pods.find((p) => p.uid === pod.uid)!;
        expect(entry.outcome).toBe('failed');
        expect(entry.error).toMatch(/no space left on device writing checkpoint .*nothing was done to the pod/);
        // its own file: the pod's UID is in the path named, no other pod's is
        expect(entry.error).toContain(pod.uid);
        for (const other of pods.filter((p) => p !== pod)) expect(entry.error).not.toContain(other.uid);
      }
      // nothing reached the runtime: no SIGTERM, every container still runs
      for (const pod of pods) {
        expect(await sigterms(pod.containers[0]!)).toEqual([]);
        expect((await exitInfo(node.cri, pod.containers[0]!.id)).state).toBe('running');
      }
      // the disk is still full: status (read-only) still works and shows them untouched
      const status = await runPodctl(['status', ...refs, '--json'], { endpoint, stateDir });
      expect(status.code, status.stderr).toBe(0);
      for (const row of (JSON.parse(status.stdout) as { pods: { state: string }[] }).pods) expect(row.state).toBe('runtime');

      free();
      const again = await runPodctl(['kill', ...refs, '--grace', '5', '--json'], { endpoint, stateDir, timeoutMs: 60_000 });
      expect(again.code, again.stderr).toBe(0);
      expect((JSON.parse(again.stdout) as KillJson).pods.map((p) => p.outcome)).toEqual(['terminated', 'terminated', 'terminated']);
    },
    120_000,
  );

  it.skipIf(!isRoot)(
    'filling mid-kill: podctl keeps going (no crash), SIGKILL within grace + 2 s, and the next run finishes everything',
    async () => {
      const grace = 6;
      const pods = await Promise.all(['midfill-a', 'midfill-b'].map((name) => node.pods.create({ name, terminationGracePeriodSeconds: grace, containers: [{ name: 'stubborn', mode: 'ignore' }] })));
      const endpoint = `unix://${node.socket}`;
      const kill = spawnPodctl(['kill', ...pods.map((p) => `${p.namespace}/${p.name}`), '--json', '--timeout', '40s'], { endpoint, stateDir });
      const done = collect(kill, 60_000);
      const firstTerm = await Promise.all(pods.map((p) => waitFor('the first SIGTERM', async () => firstSigterm(p.containers[0]!), { timeoutMs: 20_000, everyMs: 50 })));
      // the kills are on disk (write-ahead came before SIGTERM); now the disk fills under the grace
      fill();
      const run = await done;
      // podctl ended by itself, with a result — not killed by an unhandled rejection
      expect(run.signal, run.stderr).toBeNull();
      expect([0, 1], run.stderr).toContain(run.code);
      expect(run.stderr).not.toMatch(/Unhandled|unhandled|    at /);
      const result = JSON.parse(run.stdout) as KillJson;
      expect(result.pods.map((p) => p.outcome)).toEqual(['terminated', 'terminated']);
      for (const [i, pod] of pods.entries()) {
        const exit = await exitInfo(node.cri, pod.containers[0]!.id);
        expect(exit.state).toBe('exited');
        expect(exit.exitCode).toBe(137);
        expect(exit.finishedAt! - firstTerm[i]!.time).toBeLessThanOrEqual((grace + 2) * 1000);
      }

      // space back: the next run takes over what the full disk left (leases, terminating checkpoints)
      free();
      const sync = await runPodctl(['sync-known', '--desired-from', 'runtime', '--json'], { endpoint, stateDir, timeoutMs: 60_000 });
      expect(sync.code, sync.stderr).toBe(0);
      const status = await runPodctl(['status', '-A', '--json'], { endpoint, stateDir });
      expect(status.code, status.stderr).toBe(0);
      const rows = (JSON.parse(status.stdout) as { pods: { uid: string; state: string; driven: boolean | null }[] }).pods.filter((r) => pods.some((p) => p.uid === r.uid));
      for (const row of rows) {
        expect(row.state).not.toBe('terminating');
        expect(row.driven).not.toBe(false);
      }
    },
    120_000,
  );
});
