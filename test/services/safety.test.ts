/**
 * The safety rules at the service level (fast, on the in-memory session): the destructive-scope
 * gate of kill/evict, dry runs, sync-known's static-pod and empty-list rules and its prediction,
 * drain's truthful messages and partial results, and status for a pod nobody drives.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/lib/errors.js';
import { parseSelection } from '../../src/lib/refs.js';
import { Reporter } from '../../src/lib/reporter.js';
import { drainExitCode, drainNode, drainPodsToHandOff } from '../../src/services/drain/drain.js';
import { defaultGroups } from '../../src/services/drain/drain-plan.js';
import { evictPods } from '../../src/services/terminate/evict.js';
import { killPods } from '../../src/services/terminate/kill.js';
import { statusRow } from '../../src/services/diagnose/status.js';
import { syncKnown } from '../../src/services/housekeeping/sync-known.js';
import { FakeSession } from './fake-session.js';

const node = (): FakeSession =>
  new FakeSession([
    { namespace: 'kube-system', name: 'etcd', static: true, annotations: { 'kubernetes.io/config.source': 'file' }, grace: 30 },
    { namespace: 'kube-system', name: 'coredns', priority: 2_000_000_000, grace: 30 },
    { namespace: 'web', name: 'frontend', grace: 30 },
    { namespace: 'web', name: 'api', grace: 45, behaviour: 'stuck' },
  ]);

const capture = (): { lines: string[]; reporter: Reporter } => {
  const lines: string[] = [];
  return { lines, reporter: new Reporter('info', { write: (s: string) => lines.push(s) > 0, isTTY: false }) };
};

describe('the destructive-scope gate of kill and evict', () => {
  it('a static pod without --yes and without a terminal is refused before anything is requested', async () => {
    const session = node();
    const run = killPods({ session, selection: parseSelection({ args: ['kube-system/etcd'] }), wait: true, now: session.now });
    await expect(run).rejects.toThrow(UsageError);
    await expect(run).rejects.toThrow(/static.*without confirmation/);
    expect(session.kills).toEqual([]);
  });

  it('a system-critical pod (priority ≥ 2000000000) needs the same yes', async () => {
    const session = node();
    await expect(killPods({ session, selection: parseSelection({ args: ['kube-system/coredns'] }), wait: true })).rejects.toThrow(/system-critical/);
    expect(session.kills).toEqual([]);
  });

  it('--all -A asks, and the answer decides: no requests nothing, yes proceeds', async () => {
    const questions: string[] = [];
    const no = node();
    await expect(killPods({ session: no, selection: parseSelection({ args: [], all: true, allNamespaces: true }), wait: false, confirm: async (q) => (questions.push(q), false) })).rejects.toThrow(
      /not confirmed; nothing was done/,
    );
    expect(no.kills).toEqual([]);
    expect(questions[0]).toMatch(/^kill every pod on the node \(4\) and 2 static or system-critical pod\(s\)/);

    const yes = node();
    const result = await killPods({ session: yes, selection: parseSelection({ args: [], all: true, allNamespaces: true }), wait: false, confirm: async () => true });
    expect(yes.kills).toHaveLength(4);
    expect(result.status).toBe('requested');
  });

  it('an ordinary pod in one namespace needs no confirmation', async () => {
    const session = node();
    await killPods({ session, selection: parseSelection({ args: [], all: true, namespace: 'web' }), wait: false });
    expect(session.kills).toHaveLength(2);
  });

  it('evict refuses static and critical pods even with --yes, unless --force', async () => {
    const session = node();
    await expect(evictPods({ session, selection: parseSelection({ args: ['kube-system/etcd'] }), wait: false, yes: true })).rejects.toMatchObject({
      message: expect.stringMatching(/^evict refuses static and system-critical pods/),
      hint: expect.stringMatching(/--force/),
    });
    expect(session.kills).toEqual([]);
    await evictPods({ session, selection: parseSelection({ args: ['kube-system/etcd'] }), wait: false, yes: true, force: true });
    expect(session.kills).toHaveLength(1);
  });

  it('--dry-run requests nothing and plans the grace a real kill would use', async () => {
    const session = node();
    const plan = await killPods({ session, selection: parseSelection({ args: ['web/api', 'web/frontend'] }), gracePeriodSeconds: 40, wait: true, dryRun: true });
    expect(session.kills).toEqual([]);
    expect(session.waits).toEqual([]);
    expect(plan).toMatchObject({ dryRun: true, status: 'planned', timeoutSeconds: 60, timeoutSource: 'killPodNow' });
    expect(plan.pods.map((p) => [p.name, p.outcome, p.gracePeriodSeconds])).toEqual([
      ['api', 'planned', 40],
      ['frontend', 'planned', 30],
    ]);
  });
});

describe('sync-known safety', () => {
  const file = (text: string): string => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-safety-'));
    const p = path.join(dir, 'desired.json');
    writeFileSync(p, text);
    return p;
  };

  it('static pods on the node are added to the desired set unless --include-static', async () => {
    const session = node();
    const frontend = session.pod(session.uidOf('web', 'frontend'))!.pod!;
    const desired = file(JSON.stringify({ kind: 'PodList', items: [frontend] }));
    const kept = await syncKnown({ session, source: { kind: 'file', path: desired } });
    expect(session.syncCalls[0]?.map((p) => p.metadata?.name).sort()).toEqual(['etcd', 'frontend']);
    expect(kept.keptStatic.map((p) => p.name)).toEqual(['etcd']);

    const including = await syncKnown({ session, source: { kind: 'file', path: desired }, includeStatic: true });
    expect(session.syncCalls[1]?.map((p) => p.metadata?.name)).toEqual(['frontend']);
    expect(including.keptStatic).toEqual([]);
  });

  it('an empty desired list from the API server is refused (naming --yes) unless --yes', async () => {
    const session = node();
    session.apiDesired = [];
    await expect(syncKnown({ session, source: { kind: 'api' } })).rejects.toThrow(/from the API server is empty, but this node runs 4 pod\(s\)/);
    expect(session.syncCalls).toEqual([]);
    await syncKnown({ session, source: { kind: 'api' }, yes: true });
    expect(session.syncCalls).toHaveLength(1);
  });

  it('--dry-run predicts orphans, runtime orphans, resumes and forgets without calling the sync', async () => {
    const session = new FakeSession([
      { namespace: 'web', name: 'kept' },
      { namespace: 'web', name: 'orphan-worker' },
      { namespace: 'web', name: 'runtime-only', state: 'runtime' },
      { namespace: 'web', name: 'finished', state: 'finished' },
      { namespace: 'kube-system', name: 'etcd', static: true, state: 'runtime' },
    ]);
    const desired = file(JSON.stringify([session.pod(session.uidOf('web', 'kept'))!.pod]));
    const result = await syncKnown({ session, source: { kind: 'file', path: desired }, dryRun: true });
    expect(session.syncCalls).toEqual([]);
    expect(result.dryRun).toBe(true);
    expect(result.workers.map((w) => [w.name, w.orphan, w.state])).toEqual([
      ['kept', false, 'sync'],
      ['orphan-worker', true, 'terminating'],
    ]);
    expect(result.orphanedRuntimePods.map((p) => p.name)).toEqual(['runtime-only']);
    expect(result.forgotten.map((p) => p.name)).toEqual(['finished']);
    expect(result.keptStatic.map((p) => p.name)).toEqual(['etcd']);
  });
});

describe('drain says only what is true', () => {
  it('an interrupted drain returns its partial per-pod result (exit 130) and names the pods to hand on', async () => {
    const session = node();
    const controller = new AbortController();
    const original = session.waitTerminated.bind(session);
    session.waitTerminated = async (uids, options) => {
      controller.abort(new DOMException('interrupted by SIGINT', 'AbortError'));
      return original(uids, options);
    };
    const result = await drainNode({
      session,
      selection: parseSelection({ args: [], allNamespaces: true, allowEmpty: true }),
      groups: defaultGroups(30, 10),
      dryRun: false,
      signal: controller.signal,
      now: session.now,
    });
    expect(result.status).toBe('interrupted');
    expect(drainExitCode(result)).toBe(130);
    const outcomes = Object.fromEntries(result.groups.flatMap((g) => g.pods).map((p) => [p.name, p.outcome]));
    expect(outcomes.api).toBe('interrupted');
    expect(drainPodsToHandOff(result)).toEqual([session.uidOf('web', 'api')]);
  });

  it('"budget spent" only when the group used its budget; the drain bound is named when it cut the group short', async () => {
    const spent = capture();
    const s1 = node();
    await drainNode({ session: s1, selection: parseSelection({ args: [], all: true, namespace: 'web' }), groups: defaultGroups(30, 10), dryRun: false, reporter: spent.reporter, now: s1.now });
    expect(spent.lines.join('')).toMatch(/budget spent, 1 pod\(s\) still terminating/);

    const bound = capture();
    const s2 = node();
    await drainNode({
      session: s2,
      selection: parseSelection({ args: [], all: true, namespace: 'web' }),
      groups: defaultGroups(30, 10),
      dryRun: false,
      timeoutMs: 5_000,
      reporter: bound.reporter,
      now: s2.now,
    });
    expect(bound.lines.join('')).not.toMatch(/budget spent/);
    expect(bound.lines.join('')).toMatch(/drain bound 5s reached, 1 pod\(s\) still terminating/);
  });
});

describe('status of a pod nobody drives', () => {
  it('shows no countdown and no live owner; a driven pod counts down', async () => {
    const session = node();
    await killPods({ session, selection: parseSelection({ args: ['web/api'] }), wait: false });
    const pod = session.pod(session.uidOf('web', 'api'))!;
    const undriven = statusRow(pod, session.time + 1_000);
    expect(undriven).toMatchObject({ state: 'terminating', driven: false, graceLeftSeconds: null, ownerPid: null });
    const driven = statusRow({ ...pod, owner: { pid: 7, startedAt: 1, heartbeatAt: session.time, alive: true } }, session.time + 1_000);
    expect(driven).toMatchObject({ driven: true, graceLeftSeconds: 44 });
  });
});
