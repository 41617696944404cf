/**
 * Every cause of a stuck pod produced by the simulator's faults and named, with its next step, by
 * the built CLI: `status --explain` (text) and `status -o json` (`blockedBy`). The API-side causes
 * (finalizer, kubelet-owns) use the local API server; volume-busy with a held mount mounts a tmpfs
 * under a kubelet directory of its own (root only).
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseFault, startSimulator, type RunningSimulator, type SimPodSpec } from '../../src/cri/simulator/index.js';
import { writeKubeconfig } from '../kube/support.js';
import { startKubeApiServer, type KubeApiServer } from '../support/kube-api-server.js';
import { TMUX_SIZES, onOneLine, tmuxTerminal } from '../tui/support/tmux.js';
import { requireBuilt, runPodctl as podctl, type CliRun as Run, BIN, ROOT } from '../support/cli.js';
import { killAll } from '../support/process.js';

interface Node {
  sim: RunningSimulator;
  common: string[];
}

const sims: RunningSimulator[] = [];
/** Background drivers the timed-out kills handed their pods to: they would drive a stuck pod forever. */
const drivers: number[] = [];
afterAll(async () => {
  killAll(drivers);
  for (const s of sims) await s.close();
});

function rememberDriver(kill: Run): void {
  const pid = /handed to background podctl pid (\d+)/.exec(kill.stderr)?.[1];
  if (pid) drivers.push(Number(pid));
}

/** A simulator with one pod and the faults given as `--fault` specifications. */
async function node(pod: SimPodSpec, faults: string[] = []): Promise<Node> {
  const dir = mkdtempSync(path.join(tmpdir(), 'podctl-stuck-'));
  const parsed = faults.map(parseFault);
  const sim = await startSimulator({
    socketPath: path.join(dir, 'cri.sock'),
    timeScale: 0.05,
    pods: [pod],
    faults: parsed.flatMap((f) => (f.kind === 'rule' ? [f.rule] : [])),
  });
  for (const f of parsed) if (f.kind === 'process') sim.state.setProcessMode(f.container, f.mode);
  sims.push(sim);
  return { sim, common: ['--runtime-endpoint', sim.endpoint, '--state-dir', path.join(dir, 'state')] };
}

interface Blocked {
  kind: string;
  detail: string;
  next: string;
}

/** `podctl status` until `pick` returns something (the hand-off to the background driver takes a moment), bounded. */
async function poll<T>(args: string[], env: Record<string, string>, pick: (run: Run) => T | undefined, what: string): Promise<T> {
  const end = Date.now() + 20_000;
  let last: Run | undefined;
  while (Date.now() < end) {
    last = await podctl(args, env);
    const got = pick(last);
    if (got !== undefined) return got;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what} not seen within 20 s; last output: ${last?.stdout}${last?.stderr}`);
}

/**
 * Kills the pod (short timeout: it does not finish), then reads its cause as JSON and as --explain
 * text, each until it names `kind` (bounded).
 */
async function stuck(n: Node, ref: string, grace: number, kind: string, env: Record<string, string> = {}): Promise<{ blocked: Blocked; text: string }> {
  const kill = await podctl(['kill', ref, '--grace', String(grace), '--timeout', '2s', ...n.common], env);
  rememberDriver(kill);
  expect(kill.code, kill.stderr).toBe(3);
  const blocked = await poll(
    ['status', ref, '-o', 'json', ...n.common],
    env,
    (run) => {
      const b = JSON.parse(run.stdout).pods[0]?.blockedBy as Blocked | null;
      return b?.kind === kind ? b : undefined;
    },
    `blockedBy ${kind}`,
  );
  const text = await poll(['status', ref, '--explain', ...n.common], env, (run) => (run.stdout.includes(`blocked by:   ${kind}: `) ? run.stdout : undefined), `--explain naming ${kind}`);
  expect(text).toContain(`next step:    ${blocked.next}`);
  if (kind !== 'grace') expect(text).toContain(`blocked by:   ${kind}: ${blocked.detail}`);
  return { blocked, text };
}

/**
 * `podctl watch -o json` until a `pod` record of `ref` names `kind` (the watch gathers the node's
 * facts for pods on their way out, as `status` does); bounded.
 */
async function watchNames(n: Node, ref: string, kind: string, env: Record<string, string> = {}): Promise<Blocked> {
  const [namespace, name] = ref.split('/');
  const child = spawn(process.execPath, [BIN, 'watch', '-o', 'json', ...n.common], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', KUBECONFIG: '', CONTAINER_RUNTIME_ENDPOINT: '', ...env } });
  let buffered = '';
  let seen = '';
  try {
    return await new Promise<Blocked>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`watch -o json named no ${kind} for ${ref} within 20 s; saw:\n${seen.slice(-2000)}`)), 20_000);
      child.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) {
          seen += `${line}\n`;
          const r = JSON.parse(line) as { type: string; namespace?: string; name?: string; blockedBy?: Blocked };
          if (r.type === 'pod' && r.namespace === namespace && r.name === name && r.blockedBy?.kind === kind) {
            clearTimeout(timer);
            resolve(r.blockedBy);
          }
        }
      });
      child.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`watch exited (${code}) before naming ${kind}; saw:\n${seen.slice(-2000)}`));
      });
    });
  } finally {
    child.kill('SIGINT');
  }
}

beforeAll(() => {
  requireBuilt('status');
});

describe('every cause of a stuck pod, from the simulator', { timeout: 120_000 }, () => {
  it('grace: a container that ignores SIGTERM within a long grace', async () => {
    const n = await node({ name: 'slow', namespace: 'default', terminationGracePeriodSeconds: 600, containers: [{ name: 'c', onSigterm: 'ignore' }] });
    const { blocked } = await stuck(n, 'default/slow', 600, 'grace');
    expect(blocked.kind).toBe('grace');
    expect(blocked.detail).toMatch(/stopping within its grace: \d+s left of (59\d|600)s, 1 container\(s\) still running/);
    expect(blocked.next).toBe('wait, or shorten it: podctl kill default/slow --grace 0');
  });

  it('cni-teardown: StopPodSandbox fails in the network plugin, which is named', async () => {
    const n = await node({ name: 'net', namespace: 'web', containers: [{ name: 'c' }] }, [
      'StopPodSandbox=UNKNOWN:failed to destroy network for sandbox "x": plugin type="calico" failed (delete): error getting ClusterInformation: connection is unauthorized',
    ]);
    const { blocked } = await stuck(n, 'web/net', 1, 'cni-teardown');
    expect(blocked.kind).toBe('cni-teardown');
    expect(blocked.detail).toContain('StopPodSandbox failed in the network plugin "calico"');
    expect(blocked.next).toContain('calico plugin healthy');
  });

  it('uninterruptible-io: a container process in state D', async () => {
    const n = await node({ name: 'nfs-client', namespace: 'data', containers: [{ name: 'io' }] }, ['container:io=stuck']);
    const { blocked } = await stuck(n, 'data/nfs-client', 1, 'uninterruptible-io');
    expect(blocked.kind).toBe('uninterruptible-io');
    // watch names it from the same facts, with the same words
    expect(await watchNames(n, 'data/nfs-client', 'uninterruptible-io')).toEqual(blocked);
    expect(blocked.detail).toMatch(/container io \(pid \d+\) is in state D .*SIGKILL cannot help until the I\/O returns/);
    expect(blocked.next).toMatch(/cat \/proc\/\d+\/stack/);
  });

  it('stale-shim: the runtime says running, the process is gone', async () => {
    const n = await node({ name: 'ghosted', namespace: 'data', containers: [{ name: 'ghost' }] }, ['container:ghost=vanished']);
    const { blocked } = await stuck(n, 'data/ghosted', 1, 'stale-shim');
    expect(blocked.kind).toBe('stale-shim');
    expect(await watchNames(n, 'data/ghosted', 'stale-shim')).toEqual(blocked);
    expect(blocked.detail).toMatch(/container ghost running, but its process \(pid \d+\) is gone/);
    // ctr takes the full container ID (64 hex digits), never a prefix: the command runs as printed
    expect(blocked.next).toMatch(/ctr -n k8s\.io tasks delete --force [0-9a-f]{64}\)/);
  });

  it('runtime-deadline: CRI calls time out', async () => {
    const n = await node({ name: 'late', namespace: 'web', containers: [{ name: 'c' }] }, ['StopContainer=DEADLINE_EXCEEDED:context deadline exceeded']);
    const { blocked } = await stuck(n, 'web/late', 1, 'runtime-deadline');
    expect(blocked.kind).toBe('runtime-deadline');
    expect(blocked.detail).toBe('StopContainer timed out: context deadline exceeded');
    expect(blocked.next).toContain('systemctl status containerd');
  });

  it('volume-busy: the sandbox stop cannot release a mount', async () => {
    const n = await node({ name: 'vol', namespace: 'web', containers: [{ name: 'c' }] }, [
      'StopPodSandbox=UNKNOWN:failed to unmount /run/containerd/io.containerd.grpc.v1.cri/sandboxes/x/shm: device or resource busy',
    ]);
    const { blocked } = await stuck(n, 'web/vol', 1, 'volume-busy');
    expect(blocked.kind).toBe('volume-busy');
    expect(blocked.detail).toContain('device or resource busy');
    expect(blocked.next).toContain('fuser -vm');
  });

  it.skipIf(process.getuid?.() !== 0)("volume-busy: a mount under the pod's kubelet directory is still held", async () => {
    const uid = 'c0ffee00-0000-4000-8000-000000000001';
    const kubeletDir = mkdtempSync(path.join(tmpdir(), 'podctl-kubelet-'));
    const mount = path.join(kubeletDir, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'cache');
    mkdirSync(mount, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', 'tmpfs', mount]);
    try {
      const n = await node({ name: 'held', namespace: 'web', uid, containers: [{ name: 'c' }] }, ['StopPodSandbox=UNKNOWN:sandbox stop failed']);
      const { blocked } = await stuck(n, 'web/held', 1, 'volume-busy', { PODCTL_KUBELET_DIR: kubeletDir });
      expect(blocked.kind).toBe('volume-busy');
      expect(await watchNames(n, 'web/held', 'volume-busy', { PODCTL_KUBELET_DIR: kubeletDir })).toEqual(blocked);
      expect(blocked.detail).toContain(mount);
      expect(blocked.next).toBe(`find who holds it (fuser -vm ${mount}), stop that, then umount ${mount}`);
    } finally {
      execFileSync('umount', [mount]);
    }
  });
});

const hasTmux = spawnSync('tmux', ['-V']).status === 0;

describe.skipIf(!hasTmux)("the watch screen names a cause from the node's facts (tmux)", { timeout: 120_000 }, () => {
  const server = `podctl-stuck-tmux-${process.pid}`;
  const tmux = (...args: string[]) => execFileSync('tmux', ['-L', server, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  afterAll(() => {
    try {
      tmux('kill-server');
    } catch {
      // already gone
    }
  });

  it.each(TMUX_SIZES)('at $cols×$rows: a pod stuck in uninterruptible I/O reads "uninterruptible-io" on screen', async ({ cols, rows }) => {
    const name = `nfs-tmux-${cols}`;
    const n = await node({ name, namespace: 'data', containers: [{ name: 'io' }] }, ['container:io=stuck']);
    await stuck(n, `data/${name}`, 1, 'uninterruptible-io');
    const cmd = `NO_COLOR=1 node bin/run.js watch ${n.common.join(' ')}; echo "EXIT=$?"; sleep 60`;
    const session = `w${cols}`;
    tmux('new-session', '-d', '-s', session, '-x', String(cols), '-y', String(rows), '-c', ROOT, cmd);
    const t = tmuxTerminal(tmux, session);
    // the events pane names the cause at either width, on one line of the screen
    const pane = new RegExp(`data/${name} blocked-by: uninterruptible-io: container io`);
    // at 160 the row's last column names it too; at 80 that column gives way to the name and the
    // countdown, and ⏎ (the explain view) names it
    const row = new RegExp(`^. data/${name} +terminating .*uninterruptible-io`, 'm');
    const screen = await t.until((s) => pane.test(s) && (cols === 80 ? /^. data\/\S+ +terminating/m.test(s) : row.test(s)), 'the cause on screen', 20_000);
    expect(onOneLine(screen, `data/${name}`, cols)).toBe(true);
    for (const line of screen.split('\n')) expect(line.length).toBeLessThanOrEqual(cols);
    if (cols === 80) {
      expect(screen).not.toContain('LAST ERROR');
      t.keys('Enter');
      const explain = await t.until((s) => s.includes(`explain data/${name}`), 'the explain view');
      expect(explain).toMatch(/blocked by: +uninterruptible-io/);
      for (const line of explain.split('\n')) expect(line.length).toBeLessThanOrEqual(cols);
      t.keys('Escape');
    }
    t.keys('q');
  });
});

describe('the API-side causes, with the local API server', { timeout: 120_000 }, () => {
  let server: KubeApiServer;
  let kubeconfig: string;
  let healthz: http.Server;
  let healthzUrl: string;

  beforeAll(async () => {
    server = await startKubeApiServer();
    server.token = 'x';
    kubeconfig = writeKubeconfig(mkdtempSync(path.join(tmpdir(), 'podctl-stuck-api-')), server.port, 't', 'x');
    healthz = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => healthz.listen(0, '127.0.0.1', r));
    healthzUrl = `http://127.0.0.1:${(healthz.address() as AddressInfo).port}/healthz`;
  });
  afterAll(async () => {
    await server?.stop();
    await new Promise((r) => healthz?.close(r));
  });

  it('finalizer: every container stopped, the API object waits for its finalizers', async () => {
    const n = await node({ name: 'backup', namespace: 'db', uid: 'uid-backup', containers: [{ name: 'c' }] });
    const common = [...n.common, '--kubeconfig', kubeconfig, '--node', 'node-1'];
    const kill = await podctl(['kill', 'db/backup', '--grace', '1', '--force', ...common]);
    expect(kill.code, kill.stderr).toBe(0);
    server.addPod({
      metadata: { name: 'backup', namespace: 'db', uid: 'uid-backup', finalizers: ['example.com/snapshot'], deletionTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z') },
      spec: { nodeName: 'node-1', containers: [{ name: 'c' }] },
      status: { phase: 'Running' },
    });
    const json = JSON.parse((await podctl(['status', 'db/backup', '-o', 'json', ...common])).stdout);
    expect(json.pods[0].blockedBy).toMatchObject({ kind: 'finalizer', detail: expect.stringContaining('example.com/snapshot') });
    const text = (await podctl(['status', 'db/backup', '--explain', ...common])).stdout;
    expect(text).toContain('blocked by:   finalizer');
    expect(text).toContain(
      "next step:    have the controllers that own them finish (or remove a finalizer whose controller is gone): kubectl -n db get pod backup -o jsonpath='{.metadata.finalizers}'",
    );
  });

  it('kubelet-owns: a kubelet runs and the API object is being deleted, no podctl process drives it', async () => {
    const n = await node({ name: 'kube-owned', namespace: 'web', uid: 'uid-kube-owned', containers: [{ name: 'c' }] });
    server.addPod({
      metadata: { name: 'kube-owned', namespace: 'web', uid: 'uid-kube-owned', deletionTimestamp: new Date(Date.now() + 30_000).toISOString().replace(/\.\d+Z$/, 'Z'), deletionGracePeriodSeconds: 30 },
      spec: { nodeName: 'node-2', containers: [{ name: 'c' }] },
      status: { phase: 'Running' },
    });
    const common = [...n.common, '--kubeconfig', kubeconfig, '--node', 'node-2', '--kubelet-healthz', healthzUrl];
    const json = JSON.parse((await podctl(['status', 'web/kube-owned', '-o', 'json', ...common])).stdout);
    expect(json.kubelet.state).toBe('running');
    expect(json.pods[0].blockedBy).toMatchObject({ kind: 'kubelet-owns' });
    const text = (await podctl(['status', 'web/kube-owned', '--explain', ...common])).stdout;
    expect(text).toContain('blocked by:   kubelet-owns');
    expect(text).toContain("next step:    read the kubelet's log for the pod (journalctl -u kubelet | grep kube-owned)");
  });
});

describe('podctl simulator --fault', { timeout: 60_000 }, () => {
  it('--list-faults lists every fault kind with an example; a bad --fault is a usage error', async () => {
    const list = await podctl(['simulator', '--list-faults']);
    expect(list.code).toBe(0);
    for (const needle of ['METHOD=CODE[:MESSAGE]', 'METHOD=hang', 'METHOD=delay:SECONDS', 'container:NAME=stuck', 'container:NAME=vanished', 'plugin type="calico"'])
      expect(list.stdout).toContain(needle);
    const bad = await podctl(['simulator', '--fault', 'StopEverything=UNKNOWN']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toContain('"StopEverything" is not a CRI method');
    const help = await podctl(['simulator', '--help']);
    expect(help.stdout).toContain('--fault');
    expect(help.stdout).toContain('container:NAME=vanished');
  });

  it('a served simulator applies its faults: a demo pod whose network teardown fails is cni-teardown', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podctl-sim-fault-'));
    const socket = path.join(dir, 'sim.sock');
    const child: ChildProcess = spawn(
      process.execPath,
      [BIN, 'simulator', '--socket', socket, '--pods', '8', '--time-scale', '0.05', '--fault', 'StopPodSandbox=UNKNOWN:failed to destroy network for sandbox: plugin type="cilium" failed (delete)'],
      {
        env: { ...process.env, NO_COLOR: '1' },
      },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        let err = '';
        child.stderr?.on('data', (c: Buffer) => {
          err += c.toString();
          if (err.includes('serving')) resolve();
        });
        child.on('exit', () => reject(new Error(`simulator exited: ${err}`)));
      });
      const common = ['--runtime-endpoint', `unix://${socket}`, '--state-dir', path.join(dir, 'state')];
      const pods = JSON.parse((await podctl(['status', '-o', 'json', ...common])).stdout).pods as { namespace: string; name: string; static: boolean }[];
      const target = pods.find((p) => !p.static)!;
      const ref = `${target.namespace}/${target.name}`;
      const kill = await podctl(['kill', ref, '--grace', '1', '--timeout', '2s', ...common]);
      rememberDriver(kill);
      expect(kill.code, kill.stderr).toBe(3);
      const blocked = await poll(
        ['status', ref, '-o', 'json', ...common],
        {},
        (run) => {
          const b = JSON.parse(run.stdout).pods[0]?.blockedBy as Blocked | null;
          return b?.kind === 'cni-teardown' ? b : undefined;
        },
        'cni-teardown',
      );
      expect(blocked.detail).toContain('StopPodSandbox failed in the network plugin "cilium"');
    } finally {
      child.kill('SIGTERM');
    }
  });
});
