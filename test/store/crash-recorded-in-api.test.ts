/**
 * A crash between a deletion's stop and its record. The kill of a pod deleted in the API server goes
 * to the runtime without waiting for its checkpoint to reach the disk (the API server records that
 * intent; the checkpoint is made durable beside the stop): a driver on a disk slow to sync, SIGKILLed
 * the instant its StopContainer arrives, leaves no record of the kill, and the runtime, which lost the
 * request with its caller, still runs the pod. The next run (`podctl sync-known` against the API server,
 * as the agent's step) carries the deletion out again: the pod taken over from the dead driver, stopped
 * with the API's grace, finally deleted in the API; every checkpoint valid, nothing quarantined.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { checkpointFile } from '../../src/store/checkpoints.js';
import { layoutOf } from '../../src/store/state-dir.js';
import { writeAgentKubeconfig } from '../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';
import { auditCheckpoints, runDriver, type DriverRun } from './support/harness.js';

const ROOT = process.cwd();
const BIN = path.join(ROOT, 'bin', 'run.js');
const UID = 'uid-web';

describe('a crash between the stop of a deletion and its record', { timeout: 90_000 }, () => {
  let server: KubeApiServer;
  let sim: RunningSimulator;
  let dir: string;

  beforeAll(async () => {
    if (!existsSync(path.join(ROOT, 'dist', 'commands', 'sync-known.js'))) throw new Error('dist/ is missing: run `npm run build` first');
    server = await startKubeApiServer();
    dir = mkdtempSync(path.join(tmpdir(), 'podctl-crash-api-'));
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 1,
      pods: [{ name: 'web', namespace: 'app', uid: UID, terminationGracePeriodSeconds: 2, containers: [{ name: 'c', onSigterm: 'ignore' }] }],
    });
    server.addPod({
      metadata: { name: 'web', namespace: 'app', uid: UID },
      spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 2, containers: [{ name: 'c', image: 'x' }] },
      status: { phase: 'Running' },
    });
    server.deletePod('app', 'web', 2);
  });

  afterAll(async () => {
    await sim?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the stop goes out before the record; SIGKILLed there, the next sync-known stops the pod and finally deletes it', async () => {
    const stateDir = path.join(dir, 'state');
    const record = checkpointFile(layoutOf(stateDir), UID);
    let driver: DriverRun | undefined;
    let recordAtStop: boolean | undefined;
    const stop = sim.state.stopContainer.bind(sim.state);
    sim.state.stopContainer = (id, timeout, signal) => {
      if (recordAtStop !== undefined || !driver) return stop(id, timeout, signal);
      // the crash, at the instant the runtime hears of the stop; the request is lost with its caller
      recordAtStop = existsSync(record);
      driver.child.kill('SIGKILL');
      return Promise.reject(new Error('the caller is gone'));
    };
    driver = runDriver([stateDir, sim.endpoint, '20000', '--recorded-in-api', '--fsync-delay-ms', '4000', `${UID}:2`]);
    const bound = setTimeout(() => driver.child.kill('SIGKILL'), 30_000);
    await driver.exited;
    clearTimeout(bound);
    sim.state.stopContainer = stop;
    // the stop went out while its checkpoint was still on its way to the disk (4 s of fsync)
    expect(recordAtStop, driver.stderr.join('')).toBe(false);
    const running = (): boolean => sim.state.listContainers(undefined).some((c) => c.labels?.['io.kubernetes.pod.uid'] === UID && c.state === 1);
    expect(running()).toBe(true);

    const kubelet = path.join(dir, 'kubelet');
    mkdirSync(path.join(kubelet, 'pods'), { recursive: true });
    const args = [
      'sync-known',
      '--json',
      '--runtime-endpoint',
      sim.endpoint,
      '--state-dir',
      stateDir,
      '--kubeconfig',
      writeAgentKubeconfig(dir, server),
      '--node',
      'node-1',
      '--kubelet-root',
      kubelet,
    ];
    const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '' }, timeout: 60_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
      ),
    );
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { api: { deleting: { uid: string; gracePeriodSeconds: number }[]; finallyDeleted: { uid: string }[] } };
    expect(result.api.deleting).toEqual([expect.objectContaining({ uid: UID, gracePeriodSeconds: 2 })]);
    expect(result.api.finallyDeleted).toEqual([expect.objectContaining({ uid: UID })]);
    expect(running()).toBe(false);
    expect(server.getPod('app', 'web')).toBeUndefined();
    const audit = await auditCheckpoints(stateDir);
    expect(audit.invalid).toEqual([]);
    expect(audit.quarantined).toEqual([]);
  });
});
