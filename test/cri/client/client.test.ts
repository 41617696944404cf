import { afterAll, describe, expect, it } from 'vitest';
import net from 'node:net';
import path from 'node:path';
import { connectCri } from '../../../src/cri/client/client.js';
import { CriError, GrpcStatus, isDeadlineExceeded, isNotFound, isUnavailable, isUnimplemented } from '../../../src/cri/client/errors.js';
import { kubeletContainerConfig, kubeletSandboxConfig } from '../../../src/cri/client/kubelet-labels.js';
import { pauseCommand } from '../../../src/cri/simulator/index.js';
import { useSimulator, useTempDir } from '../support.js';
import { until } from '../../support/wait.js';

/** The bound of a wait here (for a loaded machine, not a speed goal) and its pace. */
const WAIT = { timeoutMs: 5_000, everyMs: 10 };

const meta = { name: 'p', namespace: 'ns', uid: 'uid-p' };

describe('CRI client against the simulator', () => {
  const simulator = useSimulator();

  it('reports the runtime version', async () => {
    const { client } = await simulator();
    const v = await client.version();
    expect(v).toMatchObject({ runtimeName: 'podctl-simulator', runtimeApiVersion: 'v1' });
  });

  it('creates, lists, inspects, stops and removes a pod', async () => {
    const { client } = await simulator();
    const sb = kubeletSandboxConfig(meta);
    const sandboxId = await client.runPodSandbox(sb);
    const cid = await client.createContainer(sandboxId, kubeletContainerConfig(meta, { name: 'app', image: 'img', ...pauseCommand('exit') }), sb);
    expect((await client.containerStatus(cid)).status?.state).toBe(0); // created
    await client.startContainer(cid);

    const containers = await client.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': 'uid-p' } });
    expect(containers.map((c) => [c.id, c.state, c.podSandboxId])).toEqual([[cid, 1, sandboxId]]);
    expect(await client.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': 'other' } })).toEqual([]);
    expect((await client.listPodSandbox({ state: { state: 0 } })).map((s) => s.id)).toEqual([sandboxId]);

    await client.stopContainer(cid, 10);
    const st = (await client.containerStatus(cid)).status!;
    expect(st.state).toBe(2);
    expect(st.exitCode).toBe(0);
    expect(typeof st.finishedAt).toBe('bigint');
    expect(st.finishedAt).toBeGreaterThan(1_600_000_000_000_000_000n); // nanoseconds since the epoch

    await client.stopPodSandbox(sandboxId);
    expect((await client.podSandboxStatus(sandboxId)).status?.state).toBe(1);
    await client.removeContainer(cid);
    await client.removePodSandbox(sandboxId);
    expect(await client.listPodSandbox()).toEqual([]);
    // removal is idempotent
    await client.removePodSandbox(sandboxId);
  });

  it('turns runtime errors into CriError with method, code and details', async () => {
    const { client } = await simulator();
    const err = await client.containerStatus('missing').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CriError);
    expect(isNotFound(err)).toBe(true);
    expect((err as CriError).method).toBe('ContainerStatus');
    expect((err as CriError).details).toContain('missing');
  });

  it('gives StopContainer its timeout on top of the call deadline', async () => {
    const { sim, client } = await simulator({ pods: [{ name: 'slow', containers: [{ name: 'c', onSigterm: 'ignore' }] }] }, 300);
    const [cid] = sim.state.containerIds();
    // 1 s stop timeout > 300 ms call deadline: the call must still wait for the kill
    await client.stopContainer(cid!, 1);
    expect(sim.state.container(cid!)?.exitCode).toBe(137);
  });

  it('fails with DeadlineExceeded when the runtime answers after the deadline', async () => {
    const { client } = await simulator({ faults: [{ method: 'Version', delayMs: 2000 }] }, 100);
    const err = await client.version().catch((e: unknown) => e);
    expect(isDeadlineExceeded(err)).toBe(true);
    expect((err as CriError).method).toBe('Version');
    // how long was waited, not grpc-js's trace of its internals
    expect((err as CriError).message).toBe('Version: DeadlineExceeded: no answer within 100ms');
  });

  it('is ready once the runtime has answered the connection (no RPC needed)', async () => {
    const { client } = await simulator({ faults: [{ method: 'Version', delayMs: 60_000 }] });
    await client.waitForReady(2000);
    // a second wait on a ready channel resolves too
    await client.waitForReady(2000);
  });

  it('a per-call timeout overrides the client default', async () => {
    const { client } = await simulator({ faults: [{ method: 'Version', delayMs: 2000 }] }, 10_000);
    const err = await client.version({ timeoutMs: 50 }).catch((e: unknown) => e);
    expect(isDeadlineExceeded(err)).toBe(true);
  });

  it('an abort rejects with the signal reason and cancels the call on the server', async () => {
    const { sim, client } = await simulator({ pods: [{ name: 'slow', containers: [{ name: 'c', onSigterm: 'ignore' }] }] });
    const [cid] = sim.state.containerIds();
    const ac = new AbortController();
    const stopping = client.stopContainer(cid!, 30, { signal: ac.signal });
    await until('one stop pending', () => sim.state.pendingStops() === 1, WAIT);
    const reason = new Error('grace shortened');
    ac.abort(reason);
    await expect(stopping).rejects.toBe(reason);
    // the runtime dropped the stop (and its kill timer): nothing keeps waiting for this call
    await until('no stop pending', () => sim.state.pendingStops() === 0, WAIT);
    expect(sim.state.container(cid!)?.state).toBe(1);
  });

  it('an already-aborted signal rejects at once without calling the runtime', async () => {
    const { sim, client } = await simulator();
    const ac = new AbortController();
    ac.abort(new Error('gone'));
    await expect(client.version({ signal: ac.signal })).rejects.toThrow('gone');
    expect(sim.state.journal().filter((r) => r.kind === 'rpc')).toEqual([]);
  });

  it('injected status codes reach the caller as CriError', async () => {
    // five UNAVAILABLE answers: the call and its four retries
    const { client } = await simulator({ faults: [{ method: 'ListPodSandbox', code: GrpcStatus.UNAVAILABLE, details: 'runtime restarting', count: 5 }] });
    const err = await client.listPodSandbox().catch((e: unknown) => e);
    expect(isUnavailable(err)).toBe(true);
    expect((err as CriError).details).toBe('runtime restarting');
    await expect(client.listPodSandbox()).resolves.toEqual([]); // count 5: the next call is fine
  });

  it("retries a call that ended UNAVAILABLE (four times, within its deadline); other codes are the engine's to retry", async () => {
    const { sim, client } = await simulator({ faults: [{ method: 'Version', code: GrpcStatus.UNAVAILABLE, details: 'connection reset', count: 2 }] });
    await expect(client.version()).resolves.toMatchObject({ runtimeApiVersion: 'v1' });
    const versions = () => sim.state.journal().filter((r) => r.kind === 'fault' && r.method === 'Version').length;
    expect(versions()).toBe(2);
    sim.setFaults([{ method: 'Version', code: GrpcStatus.UNAVAILABLE, details: 'down' }]);
    const down = await client.version().catch((e: unknown) => e);
    expect(isUnavailable(down)).toBe(true);
    expect(versions()).toBe(2 + 5);
    sim.setFaults([{ method: 'Version', code: GrpcStatus.UNKNOWN, details: 'boom', count: 1 }]);
    const unknown = await client.version().catch((e: unknown) => e);
    expect(unknown).toMatchObject({ code: GrpcStatus.UNKNOWN });
    expect(versions()).toBe(2 + 5 + 1);
  });

  it('runs ExecSync and returns output and exit code', async () => {
    const { sim, client } = await simulator({ pods: [{ name: 'x' }] });
    const [cid] = sim.state.containerIds();
    expect(await client.execSync(cid!, ['echo', 'hi', 'there'], 5)).toEqual({ stdout: 'hi there\n', stderr: '', exitCode: 0 });
    expect((await client.execSync(cid!, ['false'], 5)).exitCode).toBe(1);
    const timedOut = await client.execSync(cid!, ['sleep', '5'], 1).catch((e: unknown) => e);
    expect(isDeadlineExceeded(timedOut)).toBe(true);
  });

  it('streams container events until aborted', async () => {
    const { sim, client } = await simulator({ pods: [{ name: 'x' }] });
    const [cid] = sim.state.containerIds();
    const ac = new AbortController();
    const seen: number[] = [];
    const pods: (string | undefined)[] = [];
    const reading = (async () => {
      for await (const ev of client.containerEvents(ac.signal)) {
        seen.push(ev.containerEventType);
        pods.push(ev.podUid);
        if (ev.containerId === cid && ev.containerEventType === 2) ac.abort();
      }
    })();
    await until('the GetContainerEvents stream opened', () => sim.state.journal().some((r) => r.kind === 'rpc' && r.method === 'GetContainerEvents'), WAIT);
    await client.stopContainer(cid!, 5);
    await reading; // ends quietly on abort
    expect(seen).toContain(2);
    // each event names its pod (read from the sandbox's status the runtime sends with it)
    const [sandbox] = await client.listPodSandbox();
    expect(pods.length).toBeGreaterThan(0);
    for (const uid of pods) expect(uid).toBe(sandbox!.metadata!.uid);
  });

  it("hands on a burst of events whole and in the runtime's order", async () => {
    const { sim, client } = await simulator({ pods: 20 });
    const ac = new AbortController();
    const sent: string[] = [];
    sim.state.subscribe((e) => sent.push(`${e.containerId}/${e.containerEventType}`));
    const seen: string[] = [];
    const reading = (async () => {
      for await (const ev of client.containerEvents(ac.signal)) seen.push(`${ev.containerId}/${ev.containerEventType}`);
    })();
    await until('the GetContainerEvents stream opened', () => sim.state.journal().some((r) => r.kind === 'rpc' && r.method === 'GetContainerEvents'), WAIT);
    // one synchronous burst: every sandbox stopped (its containers' and its own events), then removed
    for (const id of sim.state.sandboxIds()) sim.state.stopPodSandbox(id);
    for (const id of sim.state.sandboxIds()) sim.state.removePodSandbox(id);
    await until('every event sent seen', () => seen.length === sent.length && sent.length > 0, WAIT);
    expect(seen).toEqual(sent);
    ac.abort();
    await reading;
  });

  it('ends an event stream in flight with Cancelled when the client is closed, and refuses a new one', async () => {
    const { sim, client } = await simulator({ pods: 1 });
    const ac = new AbortController();
    const reading = (async () => {
      for await (const _ of client.containerEvents(ac.signal)) void _;
    })().catch((e: unknown) => e);
    await until('the GetContainerEvents stream opened', () => sim.state.journal().some((r) => r.kind === 'rpc' && r.method === 'GetContainerEvents'), WAIT);
    client.close();
    expect(await reading).toMatchObject({ method: 'GetContainerEvents', code: GrpcStatus.CANCELLED });
    const again = await (async () => {
      for await (const _ of client.containerEvents(ac.signal)) void _;
    })().catch((e: unknown) => e);
    expect(again).toMatchObject({ code: GrpcStatus.CANCELLED });
  });

  it('reports Unimplemented for events on runtimes without them', async () => {
    const { client } = await simulator({ events: false });
    const ac = new AbortController();
    const err = await (async () => {
      for await (const _ of client.containerEvents(ac.signal)) void _;
    })().catch((e: unknown) => e);
    expect(isUnimplemented(err)).toBe(true);
  });
});

describe('CRI client without a runtime', () => {
  const dir = useTempDir();

  it('fails calls with Unavailable when nothing serves the socket', async () => {
    const client = await connectCri({ endpoint: `unix://${path.join(dir(), 'nothing.sock')}`, timeoutMs: 2000 });
    try {
      const err = await client.version().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CriError);
      expect(isUnavailable(err)).toBe(true);
    } finally {
      client.close();
    }
  });

  it.each([
    ['accepts and never speaks', (c: net.Socket) => void c],
    ['speaks something other than HTTP/2', (c: net.Socket) => c.write('SSH-2.0-OpenSSH_9.6\r\n')],
  ])('waitForReady on a socket that %s rejects with Connect DeadlineExceeded in one line', async (_what, onConnection) => {
    const socketPath = path.join(dir(), `not-cri-${Math.random().toString(36).slice(2)}.sock`);
    const connections = new Set<net.Socket>();
    const server = net.createServer((c) => {
      connections.add(c);
      c.on('error', () => undefined);
      onConnection(c);
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    const client = await connectCri({ endpoint: socketPath });
    try {
      const err = await client.waitForReady(300).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CriError);
      expect((err as CriError).method).toBe('Connect');
      expect(isDeadlineExceeded(err)).toBe(true);
      expect((err as CriError).message).toBe('Connect: DeadlineExceeded: no HTTP/2 answer within 300ms');
    } finally {
      client.close();
      for (const c of connections) c.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('waitForReady rejects with the signal reason on abort', async () => {
    const socketPath = path.join(dir(), 'deaf-abort.sock');
    const server = net.createServer((c) => c.on('error', () => undefined));
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const client = await connectCri({ endpoint: socketPath });
    try {
      const ac = new AbortController();
      const waiting = client.waitForReady(60_000, ac.signal).catch((e: unknown) => e);
      ac.abort(new Error('stop'));
      expect(await waiting).toEqual(new Error('stop'));
    } finally {
      client.close();
    }
  });

  it('refuses non-unix endpoints', async () => {
    await expect(connectCri({ endpoint: 'tcp://127.0.0.1:1234' })).rejects.toThrow(/only unix sockets/);
  });
});
