/**
 * No exit drops a pod: whatever way a command ends while its session still drives a terminating pod
 * (a command that returns, as `watch` does on `q`; one that fails), the base command hands those
 * pods to a background driver before it closes the session, and says so with the driver's PID.
 */
import { describe, expect, it } from 'vitest';
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
