import { describe, expect, it } from 'vitest';
import { createStyler, renderTable } from '../../../src/lib/output.js';
import { parseSelection } from '../../../src/lib/refs.js';
import type { PodSyncStatusView } from '../../../src/engine/types.js';
import type { PodInfo } from '../../../src/domain/session-api.js';
import { explainPod, podStatus, predicatesOf, statusExitCode, statusRow, waitingFor } from '../../../src/services/diagnose/status.js';
import { STATUS_HEAD, explainText, statusTable } from '../../../src/services/diagnose/output.js';
import { FakeSession } from '../fake-session.js';

const NOW = Date.parse('2026-01-01T00:10:00Z');

const view = (v: Partial<PodSyncStatusView> = {}): PodSyncStatusView => ({
  uid: 'u1',
  fullname: 'api_web',
  working: false,
  gracePeriod: 30,
  startedTerminating: false,
  deleted: false,
  evicted: false,
  finished: false,
  restartRequested: false,
  observedRuntime: true,
  ...v,
});

const terminatingPod = (): PodInfo => ({
  uid: '0b6f4c1e-aaaa-bbbb-cccc-000000000001',
  namespace: 'web',
  name: 'api',
  static: false,
  state: 'terminating',
  worker: view({ terminatingAt: NOW - 20_000, startedTerminating: true, gracePeriod: 30, working: true }),
  containersRunning: 1,
  containersTotal: 2,
  since: NOW - 20_000,
  gracePeriod: 30,
  graceDeadline: NOW + 10_000,
  owner: { pid: 777, startedAt: NOW - 60_000, heartbeatAt: NOW - 1000, alive: true },
  lastError: { message: 'StopContainer: DeadlineExceeded', at: NOW - 5000, retryAt: NOW + 4000 },
  history: [
    { at: NOW - 20_000, type: 'termination-requested', detail: 'kill, grace 30s', pid: 777 },
    { at: NOW - 5000, type: 'sync-failed', detail: 'StopContainer: DeadlineExceeded', pid: 777 },
  ],
});

describe('status rows', () => {
  it('a pod terminating past its grace + 30 s is marked stuck (table and JSON); within it, not', async () => {
    const within = statusRow({ ...terminatingPod(), graceDeadline: NOW - 29_000 }, NOW);
    const past = statusRow({ ...terminatingPod(), graceDeadline: NOW - 31_000 }, NOW);
    expect(within.stuck).toBe(false);
    expect(past.stuck).toBe(true);
    const text = await renderTable(
      statusTable({ endpoint: 'x', simulated: true, stateDir: '/s', generatedAt: '', missing: [], pods: [past, within] }, false, createStyler(false)),
      createStyler(false),
    );
    const lines = text.split('\n');
    expect(lines[1]).toMatch(/terminating \(stuck\)/);
    expect(lines[2]).not.toMatch(/stuck/);
    expect(explainText(explainPod({ ...terminatingPod(), graceDeadline: NOW - 31_000 }, NOW), createStyler(false), NOW)).toMatch(/stuck: +terminating more than 30s past its grace period/);
  });

  it('have a fixed set of keys whatever the state (nulls for absent values)', () => {
    const running = statusRow({ uid: 'u', namespace: 'a', name: 'b', static: false, state: 'runtime', containersRunning: 1, containersTotal: 1, since: NOW - 5000, history: [] }, NOW);
    const terminating = statusRow(terminatingPod(), NOW);
    expect(Object.keys(running)).toEqual(Object.keys(terminating));
    expect(running).toMatchObject({ gracePeriodSeconds: null, graceLeftSeconds: null, ownerPid: null, lastError: null, inStateSeconds: 5 });
    expect(terminating).toMatchObject({ gracePeriodSeconds: 30, graceLeftSeconds: 10, ownerPid: 777, ownerAlive: true, inStateSeconds: 20, nextRetryAt: new Date(NOW + 4000).toISOString() });
  });

  it('the table shows namespace/name, short UID, state, READY, grace left/total, time in state, age, owner, last error', async () => {
    const result = { endpoint: 'x', simulated: true, stateDir: '/s', generatedAt: '', missing: [], pods: [statusRow(terminatingPod(), NOW)] };
    const text = await renderTable(statusTable(result, false, createStyler(false)), createStyler(false));
    const [head, row] = text.split('\n');
    expect(head?.split(/\s{2,}/)).toEqual(['NAMESPACE/NAME', 'UID', 'STATE', 'READY', 'GRACE', 'IN STATE', 'AGE', 'OWNER', 'LAST ERROR']);
    // no runtime status and no creation time: READY and AGE are unknown
    expect(row?.split(/\s{2,}/)).toEqual(['web/api', '0b6f4c1e', 'terminating', '-', '10s/30s', '20s', '-', '777', 'StopContainer: DeadlineExceeded']);
    const wide = statusTable(result, true, createStyler(false));
    expect(wide.head).toContain('NEXT RETRY');
    expect(wide.rows[0]?.[1]).toBe('0b6f4c1e-aaaa-bbbb-cccc-000000000001');
  });

  it('a dead owner is marked in the OWNER column', () => {
    const pod = { ...terminatingPod(), owner: { pid: 9, startedAt: 0, heartbeatAt: 0, alive: false } };
    const spec = statusTable({ endpoint: '', simulated: false, stateDir: '', generatedAt: '', missing: [], pods: [statusRow(pod, NOW)] }, false, createStyler(false));
    expect(spec.rows[0]?.[STATUS_HEAD.indexOf('OWNER')]).toBe('9 (dead, undriven)');
  });
});

describe('engine predicates from the status view', () => {
  const answer = (v: PodSyncStatusView | undefined, isStatic = false): Record<string, boolean> => Object.fromEntries(predicatesOf(v, isStatic).map((p) => [p.name, p.value]));

  it('a running pod', () => {
    expect(answer(view())).toEqual({
      isPodKnownTerminated: false,
      couldHaveRunningContainers: true,
      isPodTerminationRequested: false,
      shouldPodContainersBeTerminating: false,
      shouldPodRuntimeBeRemoved: false,
      shouldPodContentBeRemoved: false,
      shouldPodBeFinished: false,
      isPodForMirrorPodTerminatingByFullName: false,
    });
  });

  it('a terminating static pod, termination started', () => {
    expect(answer(view({ terminatingAt: 1, startedTerminating: true }), true)).toMatchObject({
      isPodTerminationRequested: true,
      shouldPodContainersBeTerminating: true,
      couldHaveRunningContainers: true,
      isPodForMirrorPodTerminatingByFullName: true,
    });
  });

  it('terminated and evicted; deleted content goes only once terminated', () => {
    expect(answer(view({ terminatingAt: 1, terminatedAt: 2, startedTerminating: true, evicted: true }))).toMatchObject({
      isPodKnownTerminated: true,
      couldHaveRunningContainers: false,
      shouldPodRuntimeBeRemoved: true,
      shouldPodContentBeRemoved: true,
    });
    expect(answer(view({ terminatingAt: 1, deleted: true })).shouldPodContentBeRemoved).toBe(false);
    expect(answer(view({ terminatingAt: 1, terminatedAt: 2, deleted: true })).shouldPodContentBeRemoved).toBe(true);
    expect(answer(view({ terminatedAt: 2, finished: true })).shouldPodBeFinished).toBe(true);
  });

  it('an untracked pod is answered as after the first full sync', () => {
    expect(answer(undefined)).toMatchObject({ couldHaveRunningContainers: false, shouldPodBeFinished: true, shouldPodContainersBeTerminating: true, isPodTerminationRequested: false });
  });
});

describe('--explain', () => {
  it('says what a terminating pod waits for, its grace, last error and next retry, and its timeline', () => {
    const e = explainPod(terminatingPod(), NOW);
    expect(e.waitingFor).toContain('syncTerminatingPod: 1 container(s) still running must stop within the grace period (10s left of 30s)');
    expect(e.waitingFor).toContain('next retry in 4s');
    expect(e.timeline.map((t) => t.type)).toEqual(['termination-requested', 'sync-failed']);
    const text = explainText(e, createStyler(false), NOW);
    expect(text).toContain('grace:        10s left of 30s');
    expect(text).toMatch(/couldHaveRunningContainers\s+true/);
    expect(text).toContain('last error:   StopContainer: DeadlineExceeded');
    expect(text).toContain('(in 4s)');
  });

  it('names the next step for an abandoned pod, a runtime-only pod and a finished one', () => {
    const abandoned = { ...terminatingPod(), owner: { pid: 31337, startedAt: 0, heartbeatAt: 0, alive: false } };
    expect(waitingFor(abandoned, NOW)).toMatch(/owner \(pid 31337\) is gone.*podctl sync-known/);
    const { owner: _owner, ...ownerless } = terminatingPod();
    expect(waitingFor(ownerless, NOW)).toMatch(/^No podctl process drives it now.*podctl sync-known/);
    const runtimeOnly: PodInfo = { uid: 'r', namespace: 'a', name: 'b', static: false, state: 'runtime', containersRunning: 1, containersTotal: 1, since: 0, history: [] };
    expect(waitingFor(runtimeOnly, NOW)).toMatch(/no worker tracks it yet.*sync-known.*only if it is not desired/);
    const finished = { ...terminatingPod(), state: 'finished' as const, worker: view({ terminatingAt: 1, terminatedAt: 2, finished: true }) };
    expect(waitingFor(finished, NOW)).toMatch(/^Nothing: termination finished/);
    const terminated = { ...terminatingPod(), state: 'terminated' as const, worker: view({ terminatingAt: 1, terminatedAt: 2, evicted: true }) };
    expect(waitingFor(terminated, NOW)).toMatch(/^syncTerminatedPod.*evicted/);
  });
});

describe('status service', () => {
  it('lists every namespace by default, sorted; missing refs → exit 4', async () => {
    const session = new FakeSession([
      { namespace: 'web', name: 'b' },
      { namespace: 'default', name: 'a' },
    ]);
    const all = await podStatus({ session, selection: parseSelection({ args: [], allowEmpty: true, defaultAllNamespaces: true }), explain: false });
    expect(all.pods.map((p) => `${p.namespace}/${p.name}`)).toEqual(['default/a', 'web/b']);
    expect(all.explain).toBeUndefined();
    expect(statusExitCode(all)).toBe(0);
    const some = await podStatus({ session, selection: parseSelection({ args: ['web/b', 'web/x'], allowEmpty: true, defaultAllNamespaces: true }), explain: true });
    expect(some.pods).toHaveLength(1);
    expect(some.explain).toHaveLength(1);
    expect(some.missing).toEqual(['web/x']);
    expect(statusExitCode(some)).toBe(4);
  });
});
