/**
 * No exit drops a pod: whatever way a command ends while its session still drives a terminating pod
 * (a command that returns, as `watch` does on `q`; one that fails), the base command hands those
 * pods to a background driver before it closes the session, and says so with the driver's PID.
 */
import { describe, expect, it, vi } from 'vitest';
import { PodctlCommand } from '../../src/base/command.js';
import { FakeSession } from '../services/fake-session.js';
import { runCommand } from './harness.js';

/** A command that starts a kill and ends without waiting for it (like `watch` after `k` and `q`). */
class KillsAndLeaves extends PodctlCommand {
  static override flags = {};
  static fail = false;
  async run(): Promise<{ ok: boolean }> {
    const { flags } = await this.parse(KillsAndLeaves);
    this.configure(flags);
    const session = await this.session();
    const [pod] = await session.listPods();
    await session.requestKill({ uid: pod!.uid });
    if (KillsAndLeaves.fail) throw new Error('the screen went away');
    return { ok: true };
  }
}

/** A command that (maybe) starts a kill, then gets Ctrl-C `signals` times before it can hand anything on. */
class KillsAndIsInterrupted extends PodctlCommand {
  static override flags = {};
  static kill = true;
  static signals = 2;
  async run(): Promise<{ ok: boolean }> {
    const { flags } = await this.parse(KillsAndIsInterrupted);
    this.configure(flags);
    const session = await this.session();
    const [pod] = await session.listPods();
    if (KillsAndIsInterrupted.kill) await session.requestKill({ uid: pod!.uid });
    for (let i = 0; i < KillsAndIsInterrupted.signals; i += 1) process.emit('SIGINT', 'SIGINT');
    return { ok: true };
  }
}

/** Runs it with process.exit recorded instead of done. */
async function interrupted(kill: boolean, signals: number) {
  const exits: (number | string | null | undefined)[] = [];
  const exit = vi.spyOn(process, 'exit').mockImplementation(((code?: number | string | null) => void exits.push(code)) as typeof process.exit);
  KillsAndIsInterrupted.kill = kill;
  KillsAndIsInterrupted.signals = signals;
  const session = new FakeSession([{ namespace: 'web', name: 'api', behaviour: 'stuck', grace: 600 }]);
  try {
    const run = await runCommand(KillsAndIsInterrupted, ['--state-dir', '/tmp/s'], session);
    return { run, exits, session };
  } finally {
    exit.mockRestore();
  }
}

describe('Ctrl-C twice', () => {
  it('while a terminating pod is not handed on yet, a second Ctrl-C does not quit: it says so, and the pod is handed on', async () => {
    const { run, exits, session } = await interrupted(true, 2);
    expect(exits).toEqual([]);
    expect(run.stderr).toContain('SIGINT again: handing 1 pod(s) on to a background podctl first');
    expect(run.handOffs.map((h) => h.uids)).toEqual([[session.uidOf('web', 'api')]]);
    expect(run.stderr).toContain('handed to background podctl pid 99999');
  });

  it('a third Ctrl-C quits at once (exit 130); with nothing to hand on, the second one does', async () => {
    expect((await interrupted(true, 3)).exits).toEqual([130]);
    expect((await interrupted(false, 2)).exits).toEqual([130]);
  });
});

describe('handing on what a command still drives when it ends', () => {
  const stuck = (): FakeSession => new FakeSession([{ namespace: 'web', name: 'api', behaviour: 'stuck', grace: 600 }]);

  it('a command that returns while driving a terminating pod hands it on and names the PID', async () => {
    const session = stuck();
    KillsAndLeaves.fail = false;
    const run = await runCommand(KillsAndLeaves, ['--state-dir', '/tmp/s'], session);
    expect(run.exitCode).toBe(0);
    // the driver is told the runtime this process drove (it must not find another one by itself)
    expect(run.handOffs).toEqual([{ uids: [session.uidOf('web', 'api')], stateDir: '/tmp/s', runtimeEndpoint: session.endpoint }]);
    expect(run.stderr).toContain('1 pod(s) still terminating, handed to background podctl pid 99999');
    expect(session.closed).toBe(true);
  });

  it('a --runtime-endpoint given to the command is the one the driver gets', async () => {
    const session = stuck();
    KillsAndLeaves.fail = false;
    const run = await runCommand(KillsAndLeaves, ['--state-dir', '/tmp/s', '--runtime-endpoint', 'unix:///run/other.sock'], session);
    expect(run.handOffs.map((h) => h.runtimeEndpoint)).toEqual(['unix:///run/other.sock']);
  });

  it('a command that fails while driving a pod hands it on too, and still reports its error', async () => {
    const session = stuck();
    KillsAndLeaves.fail = true;
    const run = await runCommand(KillsAndLeaves, ['--state-dir', '/tmp/s'], session);
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toContain('error: the screen went away');
    expect(run.handOffs.map((h) => h.uids)).toEqual([[session.uidOf('web', 'api')]]);
  });

  it('nothing is handed on when nothing is left to drive', async () => {
    const session = new FakeSession([{ namespace: 'web', name: 'api', behaviour: 'exits' }]);
    KillsAndLeaves.fail = false;
    session.drivenUnfinished = () => [];
    const run = await runCommand(KillsAndLeaves, ['--state-dir', '/tmp/s'], session);
    expect(run.handOffs).toEqual([]);
  });
});
