import { describe, expect, it } from 'vitest';
import Drain from '../../src/commands/drain.js';
import Evict from '../../src/commands/evict.js';
import Kill from '../../src/commands/kill.js';
import Status from '../../src/commands/status.js';
import SyncKnown from '../../src/commands/sync-known.js';
import { PodctlCommand } from '../../src/base/command.js';
import { FakeSession } from '../services/fake-session.js';
import { runCommand } from './harness.js';

const node = (): FakeSession =>
  new FakeSession([
    { namespace: 'web', name: 'frontend', grace: 30, labels: { app: 'frontend' } },
    { namespace: 'web', name: 'api', grace: 5, behaviour: 'stuck' },
    { namespace: 'kube-system', name: 'etcd', static: true, grace: 30 },
  ]);

describe('global flags and the session', () => {
  it('passes --state-dir, --runtime-endpoint, --node to the session; closes it afterwards', async () => {
    const session = node();
    const run = await runCommand(Status, ['--state-dir', '/tmp/x', '--runtime-endpoint', 'unix:///tmp/s.sock', '--node', 'n1'], session);
    expect(run.exitCode).toBe(0);
    expect(run.sessionOptions).toMatchObject({ stateDir: '/tmp/x', runtimeEndpoint: 'unix:///tmp/s.sock', node: 'n1' });
    expect(session.closed).toBe(true);
  });

  it('reads PODCTL_STATE_DIR, default /var/lib/podctl', async () => {
    expect((await runCommand(Status, [], node())).sessionOptions?.stateDir).toBe('/var/lib/podctl');
    expect((await runCommand(Status, [], node(), { PODCTL_STATE_DIR: '/tmp/env-state' })).sessionOptions?.stateDir).toBe('/tmp/env-state');
  });

  it('opening the session is bounded: a hung open is exit 1 naming --state-dir, and a late session is closed', async () => {
    const previous = PodctlCommand.sessionOpenTimeoutMs;
    PodctlCommand.sessionOpenTimeoutMs = 50;
    const late = node();
    let open: (s: FakeSession) => void = () => undefined;
    try {
      const run = await runCommand(Status, ['--state-dir', '/tmp/hung'], () => new Promise((resolve) => (open = resolve)));
      expect(run.exitCode).toBe(1);
      expect(run.stderr).toMatch(/^error: opening the node session did not finish within 0.05s \(check --state-dir \/tmp\/hung and --runtime-endpoint\)/);
      open(late);
      await new Promise((r) => setImmediate(r));
      expect(late.closed).toBe(true);
    } finally {
      PodctlCommand.sessionOpenTimeoutMs = previous;
    }
  });

  it('a file-system error in the state dir names --state-dir', async () => {
    const enotdir = Object.assign(new Error("ENOTDIR: not a directory, mkdir '/tmp/f/x'"), { code: 'ENOTDIR', path: '/tmp/f/x' });
    const run = await runCommand(Status, ['--state-dir', '/tmp/f/x'], () => Promise.reject(enotdir));
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toBe('error: state dir /tmp/f/x: ENOTDIR on /tmp/f/x (pass a writable directory with --state-dir (or PODCTL_STATE_DIR))\n');
  });

  it('the session is closed even when the command fails', async () => {
    const session = node();
    const run = await runCommand(Kill, ['web/nope'], session);
    expect(run.exitCode).toBe(4);
    expect(session.closed).toBe(true);
  });
});

describe('usage errors: exit 2, one line naming the flag, nothing done', () => {
  it.each([
    [Kill, [], /no pods given \(name pods as ns\/name/],
    [Kill, ['a', '--all'], /--all cannot be combined with REF/],
    [Kill, ['web/a', '-n', 'prod'], /names namespace web but -n is prod/],
    [Kill, ['a', '--timeout', 'soon'], /--timeout: "soon" is not a duration/],
    [Kill, ['a', '--no-wait', '--timeout', '5s'], /--timeout has no effect with --no-wait/],
    [Kill, ['a', '--grace', '-1'], /--grace/],
    [Kill, ['a', '--bogus'], /Nonexistent flag: --bogus/],
    [Kill, ['-l', 'a b'], /--selector: cannot parse/],
    [Evict, ['a', '--reason', 'not camel'], /--reason "not camel" is not a CamelCase reason/],
    [Drain, ['--group', 'x'], /--group "x" is not PRIORITY:SECONDS/],
    [Drain, ['--group', '0:5', '--grace-period', '10'], /--group cannot be combined with --grace-period/],
    [Drain, ['--grace-period', '5', '--critical-grace-period', '10'], /exceeds --grace-period/],
    [Drain, ['--exclude', 'a/b/c'], /--exclude "a\/b\/c"/],
    [Drain, ['--timeout', '0s'], /--timeout: "0s" leaves no time to wait for termination/],
    [SyncKnown, [], /no source of desired pods \(pass --desired FILE or --desired-from runtime/],
    [SyncKnown, ['--desired', 'x', '--desired-from', 'runtime'], /mutually exclusive/],
    [SyncKnown, ['--desired-from', 'api'], /--desired-from api needs an API server/],
    [Status, ['--explain'], /--explain needs the pods to explain/],
    [Status, ['-o', 'xml'], /Expected --output=xml to be one of/],
  ] as const)('%o %j', async (command, argv, message) => {
    const session = node();
    const run = await runCommand(command as never, [...argv], session, { KUBECONFIG: '' });
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^error: /);
    expect(run.stdout).toBe('');
    expect(session.kills).toEqual([]);
  });

  it('--json turns the error into a JSON object on stdout with the exit code', async () => {
    const run = await runCommand(Kill, ['--json', '--timeout', 'x', 'a'], node());
    expect(run.exitCode).toBe(2);
    expect(JSON.parse(run.stdout)).toEqual({ error: { name: 'UsageError', message: expect.stringContaining('--timeout'), exitCode: 2 } });
  });

  it('stack traces only with --log-level debug', async () => {
    const quiet = await runCommand(Kill, ['--timeout', 'x', 'a'], node());
    expect(quiet.stderr).not.toMatch(/\n\s+at /);
    const debug = await runCommand(Kill, ['--timeout', 'x', 'a', '--log-level', 'debug'], node());
    expect(debug.stderr).toMatch(/\n\s+at /);
  });
});

describe('kill', () => {
  it('--json prints exactly the returned result; progress stays on stderr', async () => {
    const session = node();
    const run = await runCommand(Kill, ['web/frontend', '--json', '--grace', '3'], session);
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(JSON.parse(JSON.stringify(run.result)));
    expect(JSON.parse(run.stdout)).toMatchObject({ action: 'kill', status: 'done', timeoutSeconds: 10, pods: [{ name: 'frontend', outcome: 'terminated', gracePeriodSeconds: 3 }] });
    expect(run.stderr).toContain('waiting up to 10s');
  });

  it('a table on stdout without --json', async () => {
    const run = await runCommand(Kill, ['frontend', '-n', 'web'], node());
    expect(run.stdout.split('\n')[0]).toMatch(/^NAMESPACE\/NAME\s+UID\s+OUTCOME\s+GRACE\s+TIME\s+DRIVEN BY$/);
    expect(run.stdout).toMatch(/web\/frontend\s+\S+\s+terminated\s+30s/);
    expect(run.stderr).toContain('kill: 1 terminated');
  });

  it('exit 3 when the wait times out', async () => {
    const run = await runCommand(Kill, ['web/api', '--timeout', '1s'], node());
    expect(run.exitCode).toBe(3);
    expect(run.stderr).toContain('web/api still terminating after 1s');
  });

  it('exit 4 when a pod is not on the node', async () => {
    const run = await runCommand(Kill, ['web/nope'], node());
    expect(run.exitCode).toBe(4);
    expect(run.stderr).toBe("error: pod not found on this node: web/nope (list the node's pods with `podctl status -A`)\n");
  });

  it('exit 1 when the runtime fails', async () => {
    const session = new FakeSession([{ namespace: 'default', name: 'x', behaviour: 'fails' }]);
    const run = await runCommand(Kill, ['x'], session);
    expect(run.exitCode).toBe(1);
  });

  it('--no-wait hands the pods this process would drive to a background podctl, after closing the session', async () => {
    const session = node();
    const run = await runCommand(Kill, ['web/frontend', '--no-wait', '--json', '--state-dir', '/tmp/s', '--runtime-endpoint', 'unix:///tmp/c.sock'], session);
    expect(run.exitCode).toBe(0);
    expect(session.closed).toBe(true);
    const uid = session.uidOf('web', 'frontend');
    expect(run.handOffs).toEqual([{ uids: [uid], stateDir: '/tmp/s', runtimeEndpoint: 'unix:///tmp/c.sock' }]);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'requested', handedOffTo: { pid: 99999, uids: [uid] } });
    expect(run.stderr).toContain('handed to background podctl pid 99999');
  });

  it('without --no-wait nothing is handed off', async () => {
    const run = await runCommand(Kill, ['web/frontend'], node());
    expect(run.handOffs).toEqual([]);
  });

  it('-l with -A kills across namespaces', async () => {
    const session = node();
    await runCommand(Kill, ['-l', 'app=frontend', '-A', '--no-wait'], session);
    expect(session.kills.map((k) => session.pod(k.uid)?.name)).toEqual(['frontend']);
  });
});

describe('evict', () => {
  it('requests an eviction with --reason and --message', async () => {
    const session = node();
    const run = await runCommand(Evict, ['web/frontend', '--reason', 'DiskPressure', '--message', 'low disk', '--json'], session, { KUBECONFIG: '' });
    expect(run.exitCode).toBe(0);
    expect(session.kills[0]).toMatchObject({ evict: true, reason: 'DiskPressure', message: 'DiskPressure: low disk' });
    expect(JSON.parse(run.stdout).action).toBe('evict');
  });

  it('a broken kubeconfig is exit 1 naming --kubeconfig, before anything is evicted', async () => {
    const session = node();
    const run = await runCommand(Evict, ['web/frontend', '--kubeconfig', '/nonexistent/kubeconfig'], session);
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toMatch(/kubeconfig/);
    expect(session.kills).toEqual([]);
  });
});

describe('drain', () => {
  it('--dry-run prints the plan, exit 0, nothing killed', async () => {
    const session = node();
    const run = await runCommand(Drain, ['--dry-run'], session);
    expect(run.exitCode).toBe(0);
    expect(session.kills).toEqual([]);
    expect(run.stdout).toMatch(/1: ≥0 \(20s\)\s+web\/api/);
    expect(run.stdout).toMatch(/2: ≥2000000000 \(10s, critical\)\s+kube-system\/etcd\s+0\s+static/);
    expect(run.stderr).toContain('nothing was changed');
  });

  it('a stuck pod makes the drain partial: exit 5, JSON summary on stdout', async () => {
    const run = await runCommand(Drain, ['--yes', '--json'], node());
    expect(run.exitCode).toBe(5);
    const json = JSON.parse(run.stdout);
    expect(json.status).toBe('partial');
    expect(json.summary).toEqual({ planned: 3, terminated: 2, timedOut: 1, failed: 0, notStarted: 0, skipped: 0 });
  });

  it('-o yaml renders the same result as YAML', async () => {
    const { parse } = await import('yaml');
    const run = await runCommand(Drain, ['--dry-run', '-o', 'yaml'], node());
    expect(parse(run.stdout)).toEqual(JSON.parse(JSON.stringify(run.result)));
  });
});

describe('status', () => {
  it('-o json equals --json equals the returned result', async () => {
    const a = await runCommand(Status, ['-o', 'json'], node());
    const b = await runCommand(Status, ['--json'], node());
    // the two runs may straddle a second: the clock-derived fields are not what is compared
    const strip = (text: string): unknown => {
      const parsed = JSON.parse(text) as { pods: Record<string, unknown>[] };
      return { ...parsed, generatedAt: 'x', pods: parsed.pods.map((p) => ({ ...p, inStateSeconds: 'x' })) };
    };
    expect(strip(a.stdout)).toEqual(strip(b.stdout));
    expect(JSON.parse(a.stdout).pods).toHaveLength(3);
  });

  it('-o name prints one ns/name per line (REFs as podctl takes them); --no-headers drops the header line', async () => {
    const names = await runCommand(Status, ['-o', 'name'], node());
    expect(names.exitCode).toBe(0);
    const lines = names.stdout.trim().split('\n');
    const json = JSON.parse((await runCommand(Status, ['-o', 'json'], node())).stdout) as { pods: { namespace: string; name: string }[] };
    expect(lines).toEqual(json.pods.map((p) => `${p.namespace}/${p.name}`));
    const table = await runCommand(Status, [], node());
    const bare = await runCommand(Status, ['--no-headers'], node());
    expect(table.stdout.split('\n')[0]).toMatch(/^NAMESPACE\/NAME/);
    expect(bare.stdout).not.toMatch(/NAMESPACE\/NAME/);
    expect(bare.stdout.trim().split('\n')).toHaveLength(table.stdout.trim().split('\n').length - 1);
  });

  it('--show-labels adds a LABELS column and -L KEY one column per key (kubectl)', async () => {
    const run = await runCommand(Status, ['--show-labels', '-L', 'app,tier'], node());
    expect(run.exitCode).toBe(0);
    const [head, ...rows] = run.stdout.trim().split('\n');
    expect(head).toMatch(/\bAPP\s+TIER\s+LABELS$/);
    const frontend = rows.find((r) => r.startsWith('web/frontend'))!;
    expect(frontend).toMatch(/\bfrontend\s+app=frontend$/);
    const json = JSON.parse((await runCommand(Status, ['-o', 'json'], node())).stdout) as { pods: { name: string; labels: Record<string, string> | null }[] };
    expect(json.pods.find((p) => p.name === 'frontend')?.labels).toEqual({ app: 'frontend' });
  });

  it('--sort-by orders the rows (name, namespace, state, age, grace)', async () => {
    const order = async (by: string): Promise<string[]> => (await runCommand(Status, ['-o', 'name', '--sort-by', by], node())).stdout.trim().split('\n');
    expect(await order('name')).toEqual(['web/api', 'kube-system/etcd', 'web/frontend']);
    expect(await order('namespace')).toEqual(['kube-system/etcd', 'web/api', 'web/frontend']);
    const bad = await runCommand(Status, ['--sort-by', 'colour'], node());
    expect(bad.exitCode).toBe(2);
  });

  it('--explain prints the predicates and what the worker waits for', async () => {
    const run = await runCommand(Status, ['web/frontend', '--explain'], node());
    expect(run.stdout).toContain('engine predicates:');
    expect(run.stdout).toMatch(/couldHaveRunningContainers\s+false/);
    expect(run.stdout).toContain('waiting for:');
  });

  it('an unknown REF: exit 4 with a warning', async () => {
    const run = await runCommand(Status, ['web/none'], node());
    expect(run.exitCode).toBe(4);
    expect(run.stderr).toContain('pod not found: web/none');
  });
});

describe('sync-known', () => {
  it('--desired-from runtime gives a table of known workers', async () => {
    const session = node();
    const run = await runCommand(SyncKnown, ['--desired-from', 'runtime', '--yes'], session, { KUBECONFIG: '' });
    expect(run.exitCode).toBe(0);
    expect(session.syncCalls).toHaveLength(1);
    expect(run.stdout.split('\n')[0]).toMatch(/^NAMESPACE\/NAME\s+UID\s+STATE\s+ORPHAN\s+HAS CONFIG\s+STATIC$/);
    // the summary is part of the result: stdout, after the table (kubectl habit)
    expect(run.stdout).toContain('finished workers forgotten: 0');
    expect(run.stderr).not.toContain('finished workers forgotten');
  });
});
