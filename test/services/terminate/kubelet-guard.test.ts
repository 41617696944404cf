import { describe, expect, it } from 'vitest';
import type { V1Pod } from '../../../src/engine/types.js';
import type { KubeletStatus } from '../../../src/kube/kubelet.js';
import { UsageError } from '../../../src/lib/errors.js';
import type { ApiNode } from '../../../src/services/api/api-node.js';
import { guardKill, type GuardInput } from '../../../src/services/terminate/kubelet-guard.js';
import { FakeSession, type FakePod } from '../fake-session.js';

const running: KubeletStatus = { state: 'running', via: 'healthz', detail: 'healthz 127.0.0.1:10248 answered ok' };
const down: KubeletStatus = { state: 'down', via: 'healthz+process', detail: 'no kubelet process, healthz refused' };
const unknown: KubeletStatus = { state: 'unknown', via: 'none', detail: 'neither healthz nor /proc could be read' };

const fromApi = (name: string): FakePod => ({ namespace: 'web', name, uid: `u-${name}`, annotations: { 'kubernetes.io/config.source': 'api' } });
const staticPod: FakePod = { namespace: 'kube-system', name: 'etcd', uid: 'u-etcd', static: true, annotations: { 'kubernetes.io/config.source': 'file' } };
/** A pod the kubelet did not make (no config.source): never the kubelet's. */
const unlabelled: FakePod = { namespace: 'default', name: 'adhoc', uid: 'u-adhoc' };

/** An API server whose node list answers `pods`, or fails with `error`. */
function api(answer: V1Pod[] | Error): ApiNode {
  const listNodePods = (): Promise<V1Pod[]> => (answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer));
  return { kube: { listNodePods } } as unknown as ApiNode;
}

const bound = (name: string): V1Pod => ({ metadata: { namespace: 'web', name, uid: `u-${name}` }, spec: { nodeName: 'node-1', containers: [] }, status: { phase: 'Running' } });

async function guard(pods: FakePod[], kubelet: KubeletStatus, options: { api?: ApiNode; force?: boolean } = {}) {
  const session = new FakeSession(pods);
  const input: GuardInput = {
    session,
    targets: await session.listPods(),
    mode: 'delete',
    action: 'kill',
    dryRun: true,
    guard: { kubelet, force: options.force ?? false, viaApi: false, ...(options.api ? { api: options.api } : {}) },
  };
  return guardKill(input);
}

describe('kubelet guard: which pods a running kubelet may desire', () => {
  it('without an API server, a pod the kubelet took from the API server is refused while it runs (it cannot be told whether it is still bound here)', async () => {
    const error = await guard([fromApi('a')], running).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toMatch(/kubelet is running .* may desire web\/a \(from the API server, and no API server is configured to ask\): it would start it again/);
    // an unknown kubelet state counts as running
    await expect(guard([fromApi('a')], unknown)).rejects.toThrow(/may desire web\/a/);
  });

  it('names static pods as desired and API pods as possibly desired in one refusal', async () => {
    const error = (await guard([staticPod, fromApi('a'), fromApi('b')], running).catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(/desires kube-system\/etcd and may desire web\/a, web\/b .*start them again/);
  });

  it('with the kubelet down, or with --force, the same pods go over CRI (forced ones reported as desired)', async () => {
    const downOutcome = await guard([fromApi('a'), staticPod], down);
    expect(downOutcome.report.action).toBe('proceed');
    expect(downOutcome.remaining).toBeUndefined();
    const forced = await guard([fromApi('a')], running, { force: true });
    expect(forced.report).toMatchObject({ action: 'proceed', desired: ['web/a'] });
  });

  it('a pod the kubelet did not make, or one already finished, is not the kubelet’s', async () => {
    const outcome = await guard([unlabelled, { ...fromApi('done'), state: 'finished' }], running);
    expect(outcome.report).toMatchObject({ action: 'proceed', desired: [] });
  });

  it('with an API server that answers, only the pods bound here are the kubelet’s: those go through it, the rest over CRI', async () => {
    const outcome = await guard([fromApi('a'), fromApi('gone-from-api')], running, { api: api([bound('a')]) });
    expect(outcome.report).toMatchObject({ action: 'via-api', desired: ['web/a'] });
    expect(outcome.viaApi.map((p) => [p.name, p.outcome])).toEqual([['a', 'planned']]);
    expect(outcome.remaining).toEqual(['u-gone-from-api']);
  });

  it('with an API server whose list fails, the pods from it are refused (naming the failure), not stopped over CRI', async () => {
    const error = (await guard([fromApi('a'), unlabelled], running, { api: api(new Error('503 Service Unavailable')) }).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toMatch(/may desire web\/a, which came from the API server, but the API server's list failed: 503 Service Unavailable/);
    // the pods it could not have made are still stopped over CRI when nothing else is at stake
    const alone = await guard([unlabelled], running, { api: api(new Error('503')) });
    expect(alone.report.action).toBe('proceed');
  });
});
