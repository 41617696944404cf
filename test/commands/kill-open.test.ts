/**
 * What `podctl kill` asks first: the runtime (Version, the first relist) before the kubelet check,
 * so the check (healthz, then a /proc scan when refused) runs while the runtime answers — it does
 * not wait for the runtime's first answer (Version); and still nothing is stopped before the check
 * has answered. Needs `npm run build`.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/cri/simulator/index.js';
import { requireBuilt, runPodctl as podctl } from '../support/cli.js';
import { startHealthz } from '../support/healthz.js';

let sim: RunningSimulator;
let healthz: { url: string; close(): void };
let dir: string;
/** The runtime calls the simulator had received when each healthz request came in. */
const seenAtHealthz: string[][] = [];

beforeAll(async () => {
  requireBuilt('kill');
  dir = mkdtempSync(path.join(tmpdir(), 'podctl-kill-open-'));
  sim = await startSimulator({
    socketPath: path.join(dir, 'cri.sock'),
    timeScale: 0.05,
    pods: [{ name: 'web-1', namespace: 'web', terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] }],
  });
  healthz = await startHealthz(() => seenAtHealthz.push(sim.state.journal().flatMap((r) => (r.kind === 'rpc' ? [r.method] : []))));
});
afterAll(async () => {
  healthz?.close();
  await sim?.close();
});

describe('podctl kill', { timeout: 60_000 }, () => {
  it('asks the runtime for Version and its listing before it asks the kubelet, and stops nothing before the kubelet answered', async () => {
    const url = healthz.url;
    // the kubelet answers ok: --force stops the pod over CRI anyway (the kubelet may desire it)
    const run = await podctl(['kill', 'web/web-1', '--force', '--grace', '1', '--json', '--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state'), '--kubelet-healthz', url]);
    expect(run.code, run.stderr).toBe(0);
    const json = JSON.parse(run.stdout) as { kubelet: { state: string }; pods: { name: string; outcome: string }[] };
    expect(json.kubelet.state).toBe('running');
    expect(json.pods).toEqual([expect.objectContaining({ name: 'web-1', outcome: 'terminated' })]);
    expect(seenAtHealthz).toHaveLength(1);
    expect(seenAtHealthz[0]).toEqual(expect.arrayContaining(['Version', 'ListPodSandbox']));
    expect(seenAtHealthz[0]).not.toContain('StopContainer');
    expect(seenAtHealthz[0]).not.toContain('StopPodSandbox');
  });

  it('asks the kubelet while the runtime has not answered yet (Version held back 1 s), and stops nothing before the kubelet answered', async () => {
    const slow = await startSimulator({
      socketPath: path.join(dir, 'slow.sock'),
      timeScale: 0.05,
      pods: [{ name: 'web-2', namespace: 'web', terminationGracePeriodSeconds: 30, containers: [{ name: 'c', onSigterm: 'exit' }] }],
      faults: [{ method: 'Version', delayMs: 1_000, proceed: true }],
    });
    const asked: { at: number; calls: string[] }[] = [];
    const kubelet = await startHealthz(() => asked.push({ at: Date.now(), calls: slow.state.journal().flatMap((r) => (r.kind === 'rpc' ? [r.method] : [])) }));
    try {
      const run = await podctl([
        'kill',
        'web/web-2',
        '--force',
        '--grace',
        '1',
        '--json',
        '--runtime-endpoint',
        slow.endpoint,
        '--state-dir',
        path.join(dir, 'state-slow'),
        '--kubelet-healthz',
        kubelet.url,
      ]);
      expect(run.code, run.stderr).toBe(0);
      expect((JSON.parse(run.stdout) as { pods: { outcome: string }[] }).pods).toEqual([expect.objectContaining({ outcome: 'terminated' })]);
      const held = slow.state.journal().find((r) => r.kind === 'fault' && r.method === 'Version');
      expect(asked).toHaveLength(1);
      // the kubelet was asked before Version's answer went out (held ≥ 1 s from when it came in)
      expect(asked[0]!.at).toBeLessThan(held!.at + 1_000);
      expect(asked[0]!.calls).not.toContain('StopContainer');
    } finally {
      kubelet.close();
      await slow.close();
    }
  });
});
