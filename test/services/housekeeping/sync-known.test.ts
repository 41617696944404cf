import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/lib/errors.js';
import { parseDesiredPods, syncKnown } from '../../../src/services/housekeeping/sync-known.js';
import { syncKnownSummary } from '../../../src/services/housekeeping/output.js';
import { FakeSession } from '../fake-session.js';

const dir = mkdtempSync(path.join(tmpdir(), 'podctl-sync-'));
const file = (name: string, text: string): string => {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe('parseDesiredPods', () => {
  const pod = (name: string, uid: string, ns?: string): object => ({ kind: 'Pod', metadata: { name, uid, ...(ns ? { namespace: ns } : {}) } });

  it('reads a PodList, a list, a single pod (JSON), and multi-document YAML', async () => {
    expect((await parseDesiredPods(JSON.stringify({ kind: 'PodList', items: [pod('a', '1'), pod('b', '2')] }), 'f')).map((p) => p.metadata?.name)).toEqual(['a', 'b']);
    expect((await parseDesiredPods(JSON.stringify([pod('a', '1')]), 'f')).map((p) => p.metadata?.uid)).toEqual(['1']);
    expect((await parseDesiredPods(JSON.stringify(pod('a', '1', 'web')), 'f'))[0]?.metadata?.namespace).toBe('web');
    const yaml = 'kind: Pod\nmetadata: {name: a, uid: "1"}\n---\nkind: List\nitems:\n  - kind: Pod\n    metadata: {name: b, uid: "2", namespace: x}\n';
    const pods = await parseDesiredPods(yaml, 'f');
    expect(pods.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`)).toEqual(['default/a', 'x/b']);
  });

  it.each([
    ['', /is empty/],
    ['{not json', /invalid JSON/],
    ['a: [unclosed', /invalid YAML/],
    [JSON.stringify({ kind: 'Deployment', metadata: { name: 'x', uid: '1' } }), /found kind Deployment/],
    [JSON.stringify({ kind: 'Pod', metadata: { name: 'x' } }), /pod #1 \(x\) has no metadata.uid/],
    [JSON.stringify([{ kind: 'Pod', metadata: { uid: '1' } }]), /has no metadata.name/],
    ['42', /expected a pod/],
  ])('rejects %j as a usage error naming --desired', async (text, message) => {
    const error = await parseDesiredPods(text, 'pods.yaml').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).toContain('--desired pods.yaml');
  });
});

describe('sync-known service', () => {
  const node = (): FakeSession =>
    new FakeSession([
      { namespace: 'web', name: 'a', uid: 'ua' },
      { namespace: 'web', name: 'b', uid: 'ub', state: 'terminating' },
      { namespace: 'default', name: 'orphan', uid: 'uo', state: 'runtime', noSpec: true },
      { namespace: 'default', name: 'gone', uid: 'ug', state: 'finished' },
    ]);

  it('desired pods from a file go to the session; the known-workers map comes back named and sorted', async () => {
    const session = node();
    const desired = file('desired.json', JSON.stringify({ kind: 'PodList', items: [{ metadata: { name: 'a', namespace: 'web', uid: 'ua' } }] }));
    session.syncResult = { orphanedRuntimePods: ['uo'], resumed: ['ub'], forgotten: ['ug'] };
    const result = await syncKnown({ session, source: { kind: 'file', path: desired } });
    expect(session.syncCalls).toHaveLength(1);
    expect(session.syncCalls[0]?.map((p) => p.metadata?.uid)).toEqual(['ua']);
    expect(result.source).toBe('file');
    expect(result.desiredPods).toBe(1);
    expect(result.workers.map((w) => [`${w.namespace}/${w.name}`, w.orphan])).toEqual([
      ['default/gone', true],
      ['default/orphan', true],
      ['web/a', false],
      ['web/b', true],
    ]);
    expect(result.orphanedRuntimePods).toEqual([{ uid: 'uo', namespace: 'default', name: 'orphan' }]);
    expect(result.resumed).toEqual([{ uid: 'ub', namespace: 'web', name: 'b' }]);
    expect(result.forgotten).toEqual([{ uid: 'ug', namespace: 'default', name: 'gone' }]);
    expect(syncKnownSummary(result)).toContain('orphaned runtime pods terminated: 1: default/orphan');
  });

  it("the caller's own pod (the agent's) is never a target: kept desired and reported as skipped: self", async () => {
    const session = node();
    const desired = file('self.json', JSON.stringify({ kind: 'PodList', items: [{ metadata: { name: 'a', namespace: 'web', uid: 'ua' } }] }));
    const result = await syncKnown({ session, source: { kind: 'file', path: desired }, isSelf: (p) => p.uid === 'uo' });
    expect(session.syncCalls[0]?.map((p) => p.metadata?.uid).sort()).toEqual(['ua', 'uo']);
    expect(result.skipped).toEqual([{ uid: 'uo', namespace: 'default', name: 'orphan', reason: 'self' }]);
  });

  it('beside a running kubelet without an API server, a candidate orphan is kept (nothing can confirm it is gone); --force lets it go', async () => {
    const desired = file('kubelet.json', JSON.stringify({ kind: 'PodList', items: [{ metadata: { name: 'a', namespace: 'web', uid: 'ua' } }] }));
    const kept = await syncKnown({ session: node(), source: { kind: 'file', path: desired }, kubelet: { state: 'running', detail: 'healthz ok' } });
    expect(kept.waitingForKubelet.map((o) => o.uid)).toEqual(['uo']);
    expect(kept.waitingForKubelet[0]?.reason).toMatch(/^orphan, waiting for the kubelet \(no API server/);
    expect(kept.kubelet).toEqual({ state: 'running', detail: 'healthz ok' });
    const forced = await syncKnown({ session: node(), source: { kind: 'file', path: desired }, kubelet: { state: 'running', detail: 'healthz ok' }, force: true });
    expect(forced.waitingForKubelet).toEqual([]);
    const down = await syncKnown({ session: node(), source: { kind: 'file', path: desired }, kubelet: { state: 'down', detail: 'no kubelet' } });
    expect(down.waitingForKubelet).toEqual([]);
  });

  it('--desired-from runtime: desired = pods with a spec still in the runtime', async () => {
    const session = new FakeSession([
      { namespace: 'web', name: 'a', uid: 'ua' },
      { namespace: 'web', name: 'b', uid: 'ub', state: 'terminating' },
      { namespace: 'default', name: 'nospec', uid: 'un', state: 'runtime', noSpec: true },
    ]);
    const listed = await session.listPods();
    // the fake reports runtime presence through `runtime`; give the first two a runtime status
    for (const p of listed) if (p.uid !== 'un') Object.assign(session.pod(p.uid) ?? {}, { runtime: { id: p.uid, name: p.name, namespace: p.namespace, containerStatuses: [], sandboxStatuses: [] } });
    await syncKnown({ session, source: { kind: 'runtime' } });
    expect(session.syncCalls[0]?.map((p) => p.metadata?.uid).sort()).toEqual(['ua', 'ub']);
  });

  it('API source: the desired list is the one the API server gives for this node', async () => {
    const session = node();
    const listed = (await session.listPods()).filter((p) => !p.static && p.pod).map((p) => p.pod!);
    session.apiDesired = listed;
    const result = await syncKnown({ session, source: { kind: 'api' } });
    expect(session.syncCalls[0]?.map((p) => p.metadata?.uid)).toEqual(expect.arrayContaining(listed.map((p) => p.metadata?.uid)));
    expect(result.source).toBe('api');
  });

  it('a bad file changes nothing', async () => {
    const session = node();
    await expect(syncKnown({ session, source: { kind: 'file', path: file('bad.yaml', 'kind: Pod\nmetadata: {name: x}\n') } })).rejects.toThrow(/no metadata.uid/);
    await expect(syncKnown({ session, source: { kind: 'file', path: path.join(dir, 'missing.yaml') } })).rejects.toThrow(/cannot read \(ENOENT\)/);
    expect(session.syncCalls).toEqual([]);
  });
});
