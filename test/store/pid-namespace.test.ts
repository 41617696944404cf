/**
 * Lease ownership across PID namespaces (store/proc.ts's take-over rule). A `podctl kill` run under
 * `unshare --pid --fork --mount-proc` (as in a container with its own PID namespace) owns its pod:
 * a podctl on the host sees that owner alive and hands its own kill to it, instead of reading the
 * owner's namespace-local PID as one of its own and taking the pod over. When that owner dies, the
 * host takes the pod over, also once its namespace is gone with it. Plus the rule's unit cases: a
 * start tick of 0 and an owner in a namespace this process cannot see are decided by the heartbeat.
 * Root only (unshare).
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { UNVERIFIABLE_STALE_MS, isIdentityAlive, parseProcStat, pidNamespaceOf, procReadings, processIdentity, type ProcReadings } from '../../src/store/proc.js';
import { waitFor } from '../support/wait.js';

const ROOT = process.cwd();
const BIN = join(ROOT, 'bin', 'run.js');
const canUnshare = process.getuid?.() === 0 && spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true']).status === 0;
const built = existsSync(join(ROOT, 'dist', 'commands', 'kill.js'));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function podctl(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' }, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe('the take-over rule, in this process', () => {
  const me = processIdentity();

  it('this process is alive by PID, start tick and namespace', () => {
    expect(isIdentityAlive(me)).toBe(true);
    if (me.pidNs !== undefined) expect(me.pidNs).toBe(pidNamespaceOf('self'));
    expect(isIdentityAlive({ ...me, startTicks: me.startTicks + 1 })).toBe(false);
  });

  it('a start tick of 0 proves nothing: only a fresh heartbeat keeps such an owner', () => {
    const now = Date.now();
    expect(isIdentityAlive({ pid: process.pid, startTicks: 0 }, { heartbeatAt: now - 1_000, now })).toBe(true);
    expect(isIdentityAlive({ pid: process.pid, startTicks: 0 }, { heartbeatAt: now - UNVERIFIABLE_STALE_MS - 1, now })).toBe(false);
    expect(isIdentityAlive({ pid: 1, startTicks: 0 })).toBe(false);
  });

  it.skipIf(pidNamespaceOf('self') === undefined)('an owner in a namespace this process cannot see is decided by its heartbeat', () => {
    const now = Date.now();
    const unseen = { pid: 7, startTicks: 1234, pidNs: '1' };
    // /proc read whole, no process of that namespace in it
    const none = (): ProcReadings => ({ ...procReadings(), namespaces: new Map([['1', 'none']]) });
    // from a child namespace (the owner may be outside it)
    expect(isIdentityAlive(unseen, { heartbeatAt: now - 2_000, now, seesEveryNamespace: false, readings: none() })).toBe(true);
    expect(isIdentityAlive(unseen, { heartbeatAt: now - UNVERIFIABLE_STALE_MS - 1, now, seesEveryNamespace: false, readings: none() })).toBe(false);
    // from the host's namespace every namespace with a process in it is seen: one with none is gone,
    // however fresh the last heartbeat
    expect(isIdentityAlive(unseen, { heartbeatAt: now - 1_000, now, seesEveryNamespace: true, readings: none() })).toBe(false);
    // unless some process's namespace could not be read: then the heartbeat decides
    const partial: ProcReadings = { ...procReadings(), namespaces: new Map([['1', undefined]]) };
    expect(isIdentityAlive(unseen, { heartbeatAt: now - 1_000, now, seesEveryNamespace: true, readings: partial })).toBe(true);
    // our own namespace, a PID that does not exist in it: gone
    expect(isIdentityAlive({ pid: 4_000_000, startTicks: 5, pidNs: pidNamespaceOf('self')! })).toBe(false);
  });
});

describe.skipIf(!canUnshare || !built)(`an owner in another PID namespace${!canUnshare ? ' (skipped: needs root and unshare)' : !built ? ' (skipped: not built)' : ''}`, { timeout: 90_000 }, () => {
  const sims: RunningSimulator[] = [];
  const owners: ChildProcess[] = [];
  afterAll(async () => {
    for (const o of owners) o.kill('SIGKILL');
    for (const s of sims) await s.close();
  });

  async function node(name: string): Promise<string[]> {
    const dir = mkdtempSync(join(tmpdir(), 'podctl-pidns-'));
    const sim = await startSimulator({
      socketPath: join(dir, 'sim.sock'),
      pods: [{ name, namespace: 'default', terminationGracePeriodSeconds: 600, containers: [{ name: 'c', onSigterm: 'ignore' }] }],
    });
    sims.push(sim);
    return ['--runtime-endpoint', sim.endpoint, '--state-dir', join(dir, 'state')];
  }

  /** `podctl kill` as PID 1 of a new PID namespace (with its own /proc), killed with its unshare. */
  function ownerInNamespace(ref: string, common: string[]): ChildProcess {
    const child = spawn('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child=SIGKILL', process.execPath, BIN, 'kill', ref, '--grace', '600', '--timeout', '80s', ...common], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' },
      stdio: 'ignore',
    });
    owners.push(child);
    return child;
  }

  async function ownerOf(ref: string, common: string[]): Promise<{ ownerPid: number; ownerAlive: boolean; state: string }> {
    return waitFor(
      `${ref} terminating with an owner`,
      async () => {
        const run = await podctl(['status', ref, '--json', ...common]);
        const row = (JSON.parse(run.stdout || '{"pods":[]}') as { pods: { ownerPid: number | null; ownerAlive: boolean | null; state: string }[] }).pods[0];
        return row?.state === 'terminating' && row.ownerPid !== null ? { ownerPid: row.ownerPid, ownerAlive: row.ownerAlive === true, state: row.state } : undefined;
      },
      { timeoutMs: 20_000, everyMs: 200 },
    );
  }

  it('the host sees the owner alive and hands its kill to it; the owner applies it', async () => {
    const common = await node('ns-owned');
    const owner = ownerInNamespace('default/ns-owned', common);
    const seen = await ownerOf('default/ns-owned', common);
    // the owner's PID is its namespace's (small), not the host's
    expect(seen.ownerPid).not.toBe(owner.pid);
    expect(seen.ownerAlive).toBe(true);
    const kill = await podctl(['kill', 'default/ns-owned', '--grace', '1', '--json', ...common]);
    expect(kill.code, kill.stderr).toBe(0);
    const entry = (JSON.parse(kill.stdout) as { pods: { handledBy: string; ownerPid: number; outcome: string }[] }).pods[0]!;
    expect(entry.handledBy).toBe('delegated');
    expect(entry.ownerPid).toBe(seen.ownerPid);
    expect(entry.outcome).toBe('terminated');
  });

  it.skipIf(pidNamespaceOf('self') !== '4026531836')('an owner whose namespace is gone with it is gone at once, however fresh its heartbeat (seen from the host)', async () => {
    const child = spawn('unshare', ['--pid', '--fork', '--mount-proc', 'sleep', '60'], { stdio: 'ignore' });
    owners.push(child);
    // the namespace's first process (PID 1 inside), as a lease records its owner
    const inner = await waitFor(
      'the process inside',
      async () => {
        const children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim();
        return children === '' ? undefined : Number(children.split(' ')[0]);
      },
      { timeoutMs: 20_000, everyMs: 200 },
    );
    const owner = { pid: 1, startTicks: parseProcStat(readFileSync(`/proc/${inner}/stat`, 'utf8'))!.startTicks, pidNs: pidNamespaceOf(inner)! };
    expect(owner.pidNs).not.toBe(pidNamespaceOf('self'));
    expect(isIdentityAlive(owner, { heartbeatAt: Date.now(), now: Date.now() })).toBe(true);
    // killed, and reaped by unshare, which then exits: no process of that namespace is left
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(inner, 'SIGKILL');
    await exited;
    expect(isIdentityAlive(owner, { heartbeatAt: Date.now(), now: Date.now() })).toBe(false);
  });

  it('when the owner dies, the host takes the pod over', async () => {
    const common = await node('ns-orphaned');
    const owner = ownerInNamespace('default/ns-orphaned', common);
    const seen = await ownerOf('default/ns-orphaned', common);
    expect(seen.ownerAlive).toBe(true);
    owner.kill('SIGKILL');
    await waitFor(
      'the owner seen dead',
      async () => {
        const run = await podctl(['status', 'default/ns-orphaned', '--json', ...common]);
        const row = (JSON.parse(run.stdout || '{"pods":[]}') as { pods: { ownerAlive: boolean | null }[] }).pods[0];
        return row?.ownerAlive === false ? true : undefined;
      },
      { timeoutMs: 20_000, everyMs: 200 },
    );
    const kill = await podctl(['kill', 'default/ns-orphaned', '--grace', '1', '--json', ...common]);
    expect(kill.code, kill.stderr).toBe(0);
    const entry = (JSON.parse(kill.stdout) as { pods: { handledBy: string; outcome: string }[] }).pods[0]!;
    expect(entry.handledBy).toBe('local');
    expect(entry.outcome).toBe('terminated');
  });
});
