/**
 * Naming and selection as kubectl and crictl users write them, through the commands (fake session):
 * --field-selector on status, kill and evict, combined with -l and the namespace scope; a field
 * selector that matches nothing says where it does.
 */
import { describe, expect, it } from 'vitest';
import Kill from '../../src/commands/kill.js';
import Status from '../../src/commands/status.js';
import type { StatusResult } from '../../src/services/diagnose/status.js';
import { FakeSession } from '../services/fake-session.js';
import { runCommand } from './harness.js';

const node = (): FakeSession =>
  new FakeSession([
    { namespace: 'web', name: 'frontend', grace: 30, labels: { app: 'frontend' } },
    { namespace: 'web', name: 'api', grace: 5, labels: { app: 'api' } },
    { namespace: 'web', name: 'done', state: 'terminated', containers: 0 },
    { namespace: 'kube-system', name: 'etcd', static: true, grace: 30 },
    { namespace: 'batch', name: 'frontend', labels: { app: 'frontend' } },
  ]);

const refs = (result: unknown): string[] => ((result as StatusResult | undefined)?.pods ?? []).map((p) => `${p.namespace}/${p.name}`);

describe('--field-selector', () => {
  it('status: by name, namespace and state, with = == and !=', async () => {
    expect(refs((await runCommand(Status, ['--field-selector', 'metadata.name=frontend', '--json'], node())).result)).toEqual(['batch/frontend', 'web/frontend']);
    expect(refs((await runCommand(Status, ['--field-selector', 'metadata.namespace==kube-system', '--json'], node())).result)).toEqual(['kube-system/etcd']);
    expect(refs((await runCommand(Status, ['-n', 'web', '--field-selector', 'state!=sync', '--json'], node())).result)).toEqual(['web/done']);
  });

  it('status: status.phase, and -l with it (both hold)', async () => {
    const running = refs((await runCommand(Status, ['--field-selector', 'status.phase=Running', '--json'], node())).result);
    expect(running).toContain('web/api');
    expect(running).not.toContain('web/done');
    expect(refs((await runCommand(Status, ['-l', 'app=frontend', '--field-selector', 'metadata.namespace!=web', '--json'], node())).result)).toEqual(['batch/frontend']);
  });

  it('kill: acts only on the pods both selectors pick', async () => {
    const session = node();
    const run = await runCommand(Kill, ['-n', 'web', '-l', 'app', '--field-selector', 'metadata.name!=frontend', '--json'], session);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(session.kills.map((k) => k.uid)).toEqual([session.uidOf('web', 'api')]);
  });

  it('kill: a field selector matching nothing in its namespace says where it matches', async () => {
    const session = node();
    const run = await runCommand(Kill, ['--field-selector', 'metadata.name=etcd'], session);
    expect(run.exitCode).toBe(4);
    expect(run.stderr).toBe('error: pod not found on this node: no pod matches --field-selector metadata.name=etcd in namespace default (1 matches in namespace kube-system: add -n kube-system)\n');
    expect(session.kills).toEqual([]);
  });

  it('bad field selectors are one-line usage errors before anything happens', async () => {
    for (const [argv, message] of [
      [['--field-selector', 'spec.nodeName=n1'], 'error: --field-selector: "spec.nodeName" is not a field podctl knows'],
      [['--field-selector', 'status.phase!=Runing', '-A'], 'error: --field-selector: status.phase is never "Runing"'],
      [['web/api', '--field-selector', 'state=sync'], 'error: REF/--uid cannot be combined with --field-selector'],
      [['--all', '--field-selector', 'state=sync'], 'error: --all cannot be combined with --field-selector'],
    ] as const) {
      const session = node();
      const run = await runCommand(Kill, [...argv], session);
      expect(run.exitCode, argv.join(' ')).toBe(2);
      expect(run.stderr.startsWith(message), run.stderr).toBe(true);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(session.kills).toEqual([]);
    }
  });
});
