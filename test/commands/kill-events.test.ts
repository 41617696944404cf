/**
 * When `podctl kill` and `podctl evict` of one pod open the runtime's event stream: with the wait,
 * after the stops are on their way, not while the session opens (the stream's own connection, and on containerd 1.6
 * its Unimplemented answer, then cost nothing on the way to StopContainer). Through the built CLI
 * against the embedded simulator with events, whose journal records every call (as containerd 1.6,
 * it answers the stream Unimplemented without a record). Needs `npm run build`.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import type { SimRecord } from '../../src/cri/simulator/types.js';
import { requireBuilt, runPodctl as podctl } from '../support/cli.js';

let sim: RunningSimulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

describe.each(['kill', 'evict'])('podctl %s of one pod: the runtime event stream', { timeout: 60_000 }, (verb) => {
  it('is asked for once, after StopContainer, and the command ends as before', async () => {
    requireBuilt(verb);
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-kill-events-'));
    sim = await startSimulator({
      socketPath: path.join(dir, 'cri.sock'),
      timeScale: 0.05,
      events: true,
      pods: [{ name: 'web-1', namespace: 'web', terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] }],
    });
    const run = await podctl([verb, 'web/web-1', '--json', '--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')]);
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as { pods: { outcome: string }[] }).pods).toEqual([expect.objectContaining({ outcome: 'terminated' })]);
    const methods = sim.state
      .journal()
      .filter((r): r is Extract<SimRecord, { kind: 'rpc' }> => r.kind === 'rpc')
      .map((r) => r.method);
    const stop = methods.indexOf('StopContainer');
    const stream = methods.indexOf('GetContainerEvents');
    expect(stop, methods.join(' ')).toBeGreaterThan(0);
    // asked once, with the wait (the previous build: right after the session's first relist)
    expect(stream, methods.join(' ')).toBeGreaterThan(stop);
    expect(methods.filter((m) => m === 'GetContainerEvents')).toHaveLength(1);
  });
});
