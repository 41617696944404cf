/**
 * One JSON vocabulary across the commands (lib/json-vocabulary.ts): documented fields are present
 * (null when unknown), times are ISO 8601, states are the pod-worker names; and `status -w`.
 */
import { describe, expect, it } from 'vitest';
import Drain from '../../src/commands/drain.js';
import Evict from '../../src/commands/evict.js';
import Kill from '../../src/commands/kill.js';
import Status from '../../src/commands/status.js';
import Watch from '../../src/commands/watch.js';
import { CriError } from '../../src/cri/client/errors.js';
import SyncKnown from '../../src/commands/sync-known.js';
import { POD_STATES } from '../../src/lib/json-vocabulary.js';
import { podRecord } from '../../src/services/watch/watch.js';
import { statusRow } from '../../src/services/diagnose/status.js';
import { FakeSession } from '../services/fake-session.js';
import { pod } from '../tui/support/fake-session.js';
import { runCommand } from './harness.js';

const node = (): FakeSession =>
  new FakeSession([
    { namespace: 'web', name: 'frontend', grace: 30, labels: { app: 'frontend' } },
    { namespace: 'web', name: 'api', grace: 5, behaviour: 'stuck' },
    { namespace: 'kube-system', name: 'etcd', static: true, grace: 30 },
    { namespace: 'default', name: 'broken', behaviour: 'fails' },
  ]);

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** Every object of `rows` has exactly the keys of the first. */
function sameKeys(rows: object[]): void {
  expect(rows.length).toBeGreaterThan(1);
  const keys = Object.keys(rows[0]!).sort();
  for (const row of rows) expect(Object.keys(row).sort()).toEqual(keys);
}

describe('results: documented fields are null, never absent', () => {
  it('kill and evict --json: every pod has handledBy, ownerPid, elapsedMs, error; the result handedOffTo, apiServer, kubelet', async () => {
    const kill = await runCommand(Kill, ['web/frontend', 'default/broken', 'web/api', '--timeout', '1s', '--json'], node(), { KUBECONFIG: '' });
    const result = JSON.parse(kill.stdout) as { pods: Record<string, unknown>[] } & Record<string, unknown>;
    sameKeys(result.pods);
    expect(result.pods.find((p) => p.name === 'frontend')).toMatchObject({ outcome: 'terminated', error: null });
    expect(result.pods.find((p) => p.name === 'broken')?.error).toEqual(expect.any(String));
    for (const key of ['handedOffTo', 'apiServer', 'kubelet']) expect(result, key).toHaveProperty(key);
    expect(result.apiServer).toBeNull();
    const evict = JSON.parse((await runCommand(Evict, ['web/frontend', '--json'], node(), { KUBECONFIG: '' })).stdout) as { pods: Record<string, unknown>[] } & Record<string, unknown>;
    expect(evict.pods[0]).toHaveProperty('error', null);
    expect(evict).toHaveProperty('handedOffTo', null);
  });

  it("drain -o json and --json give the same shape, with null for a pod's error and a group never started", async () => {
    const viaOutput = JSON.parse((await runCommand(Drain, ['--dry-run', '-o', 'json'], node(), { KUBECONFIG: '' })).stdout) as { groups: { pods: Record<string, unknown>[] }[] };
    const viaJson = JSON.parse((await runCommand(Drain, ['--dry-run', '--json'], node(), { KUBECONFIG: '' })).stdout) as typeof viaOutput;
    expect(Object.keys(viaOutput).sort()).toEqual(Object.keys(viaJson).sort());
    const pods = viaOutput.groups.flatMap((g) => g.pods);
    sameKeys(pods);
    for (const p of pods) expect(p).toHaveProperty('error', null);
    for (const g of viaOutput.groups) expect(g).toHaveProperty('startedAtMs', null);
    expect(viaOutput).toHaveProperty('handedOffTo', null);
  });

  it('sync-known -o json: each worker has error; the result api and kubelet', async () => {
    const run = await runCommand(SyncKnown, ['--desired-from', 'runtime', '--yes', '-o', 'json'], node(), { KUBECONFIG: '' });
    expect(run.exitCode).toBe(0);
    const result = JSON.parse(run.stdout) as { workers: Record<string, unknown>[] } & Record<string, unknown>;
    expect(result).toHaveProperty('api', null);
    for (const w of result.workers) expect(w).toHaveProperty('error');
  });

  it('status -o json: READY and createdAt on every row, explain null without --explain, states from the one list', async () => {
    const run = await runCommand(Status, ['-o', 'json'], node());
    const result = JSON.parse(run.stdout) as { pods: Record<string, unknown>[] } & Record<string, unknown>;
    expect(result).toHaveProperty('explain', null);
    sameKeys(result.pods);
    for (const p of result.pods) {
      expect(p).toHaveProperty('ready');
      expect(p).toHaveProperty('createdAt');
      expect(POD_STATES).toContain(p.state);
      expect(p.since).toMatch(ISO);
    }
    // the table words `sync` as `running`; the JSON does not
    expect(result.pods.find((p) => p.name === 'frontend')?.state).toBe('sync');
    expect((await runCommand(Status, ['web/frontend'], node())).stdout).toMatch(/web\/frontend\s+\S+\s+running\s/);
  });

  it("status and watch name a pod's state and times alike", () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    for (const state of POD_STATES) {
      const p = pod('web/a', { state, since: now - 5_000, gracePeriod: 30, graceDeadline: now + 25_000 });
      const row = statusRow(p, now);
      const record = podRecord(p, now);
      expect(record.state).toBe(row.state);
      expect(record.since).toBe(row.since);
      expect(record.createdAt).toBe(row.createdAt);
      expect(record.ready).toEqual(row.ready);
      expect(record.at).toMatch(ISO);
      expect(record.graceDeadline).toMatch(ISO);
    }
    // a record without the optional values has the same keys, with nulls
    const bare = podRecord(pod('web/b'), now);
    expect(Object.keys(bare).sort()).toEqual(
      Object.keys(podRecord(pod('web/a', { gracePeriod: 1, graceDeadline: now, owner: { pid: 1, startedAt: 0, heartbeatAt: 0, alive: true }, lastError: { message: 'x', at: now } }), now)).sort(),
    );
    expect(bare).toMatchObject({ gracePeriodSeconds: null, graceDeadline: null, ownerPid: null, lastError: null, blockedBy: null });
  });
});

describe('status -w', () => {
  it('prints the table, then follows until --watch-for passes: exit 0', async () => {
    const run = await runCommand(Status, ['-w', '--watch-for', '1ms'], node());
    expect(run.exitCode).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^NAMESPACE\/NAME\s+UID\s+STATE\s+READY\s+GRACE\s+IN STATE\s+AGE\s+OWNER\s+LAST ERROR$/);
    expect(lines).toHaveLength(5);
  });

  it('-o json (and --json): one JSON object per line, the pods at start as "added" rows of status -o json', async () => {
    for (const format of [['-o', 'json'], ['--json']]) {
      const run = await runCommand(Status, ['-w', '--watch-for', '1ms', ...format], node());
      expect(run.exitCode).toBe(0);
      const records = run.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { type: string; at: string; pod: Record<string, unknown> });
      expect(records.map((r) => r.type)).toEqual(['added', 'added', 'added', 'added']);
      const rows = (JSON.parse((await runCommand(Status, ['-o', 'json'], node())).stdout) as { pods: Record<string, unknown>[] }).pods;
      expect(records.map((r) => Object.keys(r.pod))).toEqual(rows.map((r) => Object.keys(r)));
      for (const r of records) expect(r.at).toMatch(ISO);
    }
  });

  it('contradictions are usage errors: exit 2, one line', async () => {
    for (const argv of [
      ['-w', 'web/api', '--explain'],
      ['-w', '-o', 'yaml'],
      ['--watch-for', '10s'],
      ['-w', '--watch-for', 'soon'],
    ]) {
      const run = await runCommand(Status, argv, node());
      expect(run.exitCode, argv.join(' ')).toBe(2);
      expect(run.stderr.trim().split('\n'), argv.join(' ')).toHaveLength(1);
      expect(run.stdout, argv.join(' ')).toBe('');
    }
  });
});

describe('error records', () => {
  const unreachable = () => Promise.reject(new CriError('Version', 14, 'connection refused'));

  it('--json: the error is named from the one list (a CRI failure is RuntimeError), exit 1', async () => {
    const run = await runCommand(Status, ['--json'], unreachable);
    expect(run.exitCode).toBe(1);
    expect(JSON.parse(run.stdout)).toEqual({ error: { name: 'RuntimeError', message: expect.stringContaining('connection refused'), exitCode: 1 } });
  });

  it('a JSON stream (watch --json, watch -o json, status -w -o json) ends with one error line on stdout and one line on stderr', async () => {
    for (const [command, argv] of [
      [Watch, ['--json']],
      [Watch, ['-o', 'json']],
      [Status, ['-w', '-o', 'json']],
      [Status, ['-w', '--json']],
    ] as const) {
      const run = await runCommand(command as typeof Status, [...argv], unreachable);
      const label = `${command.name} ${argv.join(' ')}`;
      expect(run.exitCode, label).toBe(1);
      expect(run.stdout.trim().split('\n'), label).toHaveLength(1);
      expect(JSON.parse(run.stdout), label).toEqual({
        type: 'error',
        at: expect.stringMatching(ISO),
        error: { name: 'RuntimeError', message: expect.stringContaining('connection refused'), exitCode: 1 },
      });
      expect(run.stderr.trim().split('\n'), label).toEqual([expect.stringMatching(/^error: Version: .*connection refused$/)]);
    }
  });

  it('--json with another -o: one line on stderr, nothing on stdout, exit 2', async () => {
    for (const argv of [
      ['-o', 'yaml', '--json'],
      ['-o', 'wide', '--json'],
      ['-w', '-o', 'name', '--json'],
    ]) {
      const run = await runCommand(Status, argv, node());
      expect(run.exitCode, argv.join(' ')).toBe(2);
      expect(run.stdout, argv.join(' ')).toBe('');
      expect(run.stderr.trim().split('\n'), argv.join(' ')).toEqual([expect.stringMatching(/^error: --json and -o \w+ ask for two formats/)]);
    }
  });
});
