/**
 * Kubelet-style pods on the real containerd test node, for the end-to-end suite and the benchmark.
 *
 * A pod is described once as a V1Pod (what the API server would hold) and written into the
 * runtime exactly as the kubelet writes it: RunPodSandbox with the pod's labels plus
 * io.kubernetes.pod.{name,namespace,uid} and the pod's annotations (kubernetes.io/config.source …);
 * then CreateContainer/StartContainer per container with the container labels
 * io.kubernetes.{pod.name,pod.namespace,pod.uid,container.name} and the annotations
 * io.kubernetes.container.{hash,restartCount,terminationMessagePath,terminationMessagePolicy,
 * preStopHandler,type} and io.kubernetes.pod.{terminationGracePeriod,deletionGracePeriod}.
 * podctl rebuilds pods from exactly these, so the suite proves that path against the real thing.
 * This writer follows the kubelet (pkg/kubelet/kuberuntime labels.go) on its own, deliberately not
 * through podctl's builders in src/cri/client/kubelet-labels.ts: a key both spelled wrong would otherwise
 * go unnoticed.
 *
 * Every container runs the test image's /pause in one of its modes (its argv):
 *   default → exits 0 on SIGTERM; ignore → only SIGKILL ends it; graceful N → exits N s after SIGTERM.
 *
 * Invariants:
 * - Names and UIDs are unique per call (a test never sees another test's pods).
 * - `create()` returns only once every container's /pause has its signal handlers installed (it
 *   logged "started"), so a kill that follows is never lost to a too-early SIGTERM.
 * - A `PodFactory` remembers every sandbox it created; `removeAll()` stops and removes them
 *   (StopPodSandbox SIGKILLs whatever still runs), so each test leaves the node as it found it.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Container, V1LifecycleHandler, V1Pod } from '@kubernetes/client-node';
import type { CriClient } from '../../../src/cri/client/client.js';
import { isDeadlineExceeded, isNotFound, isTransient } from '../../../src/cri/client/errors.js';
import { TEST_IMAGE } from './env.js';

type PauseMode = 'default' | 'ignore' | { graceful: number };

interface ContainerInput {
  name: string;
  mode: PauseMode;
  preStop?: V1LifecycleHandler;
}

export interface PodInput {
  /** Name prefix; a unique suffix is added. Default "e2e". */
  name?: string;
  namespace?: string;
  /** Default: one container "main" in mode default. */
  containers?: ContainerInput[];
  /** spec.terminationGracePeriodSeconds; default 30 (the API default). */
  terminationGracePeriodSeconds?: number;
  /** metadata.deletionGracePeriodSeconds (a pod being deleted); unset by default. */
  deletionGracePeriodSeconds?: number;
  /** kubernetes.io/config.source: 'api' (default) or a static source ('file', 'http'). */
  configSource?: 'api' | 'file' | 'http';
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  restartPolicy?: 'Always' | 'OnFailure' | 'Never';
  /** Host network (the sandbox then needs an empty hostname). Default false. */
  hostNetwork?: boolean;
}

export interface RealContainer {
  name: string;
  id: string;
  mode: PauseMode;
  /** Absolute path of the container's CRI log file. */
  logPath: string;
}

export interface RealPod {
  /** The pod as the API server would hold it (what a kubelet-driven kill is given). */
  pod: V1Pod;
  uid: string;
  namespace: string;
  name: string;
  sandboxId: string;
  logDirectory: string;
  containers: RealContainer[];
}

/** CRI NamespaceMode: POD = 0, CONTAINER = 1, NODE = 2. */
const NamespaceMode = { POD: 0, CONTAINER: 1, NODE: 2 } as const;

/** The subset of the generated PodSandboxConfig the kubelet fills in for these pods. */
interface SandboxConfig {
  metadata: { name: string; uid: string; namespace: string; attempt: number };
  hostname: string;
  logDirectory: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  linux: {
    cgroupParent: string;
    securityContext: { namespaceOptions: { network: number; pid: number; ipc: number } };
  };
}

/** The subset of the generated ContainerConfig the kubelet fills in for these pods. */
interface ContainerConfig {
  metadata: { name: string; attempt: number };
  image: { image: string };
  command: string[];
  args: string[];
  workingDir: string;
  logPath: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  linux: { securityContext: { namespaceOptions: { network: number; pid: number; ipc: number } } };
}

let sequence = 0;
/** A DNS-1123 name unique to this process and call. */
function uniqueName(prefix: string): string {
  sequence += 1;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${sequence}`;
}

function pauseArgs(mode: PauseMode): string[] {
  if (mode === 'default') return [];
  if (mode === 'ignore') return ['ignore'];
  return ['graceful', String(mode.graceful)];
}

/** 64-bit FNV-1a of the container spec, as hex: the shape (not the value) of the kubelet's hash. */
function containerHash(container: V1Container): string {
  let hash = 0xcbf29ce484222325n;
  for (const byte of Buffer.from(JSON.stringify(container))) {
    hash ^= BigInt(byte);
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16);
}

/** The V1Pod the API server would hold for `input` (uid and name already chosen). */
export function buildPod(input: PodInput, name: string, uid: string): V1Pod {
  const namespace = input.namespace ?? 'e2e';
  const source = input.configSource ?? 'api';
  const annotations: Record<string, string> = {
    'kubernetes.io/config.source': source,
    'kubernetes.io/config.seen': new Date().toISOString(),
    ...(source === 'api' ? {} : { 'kubernetes.io/config.hash': uid.replace(/-/g, '') }),
    ...input.annotations,
  };
  const containers: V1Container[] = (input.containers ?? [{ name: 'main', mode: 'default' }]).map((c) => ({
    name: c.name,
    image: TEST_IMAGE,
    command: ['/pause'],
    args: pauseArgs(c.mode),
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    imagePullPolicy: 'Never',
    ...(c.preStop ? { lifecycle: { preStop: c.preStop } } : {}),
  }));
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      uid,
      labels: { app: 'podctl-e2e', ...input.labels },
      annotations,
      ...(input.deletionGracePeriodSeconds !== undefined ? { deletionGracePeriodSeconds: input.deletionGracePeriodSeconds, deletionTimestamp: new Date() } : {}),
    },
    spec: {
      containers,
      restartPolicy: input.restartPolicy ?? 'Always',
      terminationGracePeriodSeconds: input.terminationGracePeriodSeconds ?? 30,
      hostNetwork: input.hostNetwork ?? false,
      nodeName: 'podctl-e2e-node',
    },
    status: { phase: 'Running' },
  };
}

function namespaceOptions(hostNetwork: boolean) {
  return { network: hostNetwork ? NamespaceMode.NODE : NamespaceMode.POD, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.POD };
}

/** What the kubelet's generatePodSandboxConfig writes for `pod`. */
function sandboxConfigFor(pod: V1Pod, logRoot: string): SandboxConfig {
  const meta = pod.metadata!;
  const hostNetwork = pod.spec?.hostNetwork === true;
  return {
    metadata: { name: meta.name!, uid: meta.uid!, namespace: meta.namespace!, attempt: 0 },
    // containerd rejects a hostname for host-network sandboxes on these machines
    hostname: hostNetwork ? '' : meta.name!,
    logDirectory: join(logRoot, `${meta.namespace}_${meta.name}_${meta.uid}`),
    labels: {
      ...meta.labels,
      'io.kubernetes.pod.name': meta.name!,
      'io.kubernetes.pod.namespace': meta.namespace!,
      'io.kubernetes.pod.uid': meta.uid!,
    },
    annotations: { ...meta.annotations },
    linux: { cgroupParent: '', securityContext: { namespaceOptions: namespaceOptions(hostNetwork) } },
  };
}

/** What the kubelet's generateContainerConfig writes for one container of `pod` (first attempt). */
function containerConfigFor(pod: V1Pod, container: V1Container): ContainerConfig {
  const meta = pod.metadata!;
  const annotations: Record<string, string> = {
    'io.kubernetes.container.hash': containerHash(container),
    'io.kubernetes.container.restartCount': '0',
    'io.kubernetes.container.terminationMessagePath': container.terminationMessagePath ?? '/dev/termination-log',
    'io.kubernetes.container.terminationMessagePolicy': container.terminationMessagePolicy ?? 'File',
    'io.kubernetes.container.type': 'container',
  };
  if (meta.deletionGracePeriodSeconds !== undefined) {
    annotations['io.kubernetes.pod.deletionGracePeriod'] = String(meta.deletionGracePeriodSeconds);
  }
  if (pod.spec?.terminationGracePeriodSeconds !== undefined) {
    annotations['io.kubernetes.pod.terminationGracePeriod'] = String(pod.spec.terminationGracePeriodSeconds);
  }
  if (container.lifecycle?.preStop) {
    annotations['io.kubernetes.container.preStopHandler'] = JSON.stringify(container.lifecycle.preStop);
  }
  return {
    metadata: { name: container.name, attempt: 0 },
    image: { image: container.image ?? TEST_IMAGE },
    command: container.command ?? [],
    args: container.args ?? [],
    workingDir: '',
    logPath: `${container.name}/0.log`,
    labels: {
      'io.kubernetes.pod.name': meta.name!,
      'io.kubernetes.pod.namespace': meta.namespace!,
      'io.kubernetes.pod.uid': meta.uid!,
      'io.kubernetes.container.name': container.name,
    },
    annotations,
    linux: { securityContext: { namespaceOptions: namespaceOptions(pod.spec?.hostNetwork === true) } },
  };
}

/** Creates kubelet-style pods on the node and removes them again. */
export class PodFactory {
  readonly #cri: CriClient;
  readonly #logRoot: string;
  readonly #created = new Map<string, RealPod>();

  /** `logRoot`: where pod log directories go (the kubelet's /var/log/pods). */
  constructor(cri: CriClient, logRoot: string) {
    this.#cri = cri;
    this.#logRoot = logRoot;
  }

  /** Runs the sandbox and starts every container; resolves when all are started. */
  async create(input: PodInput = {}, signal?: AbortSignal): Promise<RealPod> {
    const uid = randomUUID();
    const name = uniqueName(input.name ?? 'e2e');
    const pod = buildPod(input, name, uid);
    const sandboxConfig = sandboxConfigFor(pod, this.#logRoot);
    const sandboxId = await this.#cri.runPodSandbox(sandboxConfig, { signal, timeoutMs: 60_000 });
    const real: RealPod = {
      pod,
      uid,
      name,
      namespace: pod.metadata!.namespace!,
      sandboxId,
      logDirectory: sandboxConfig.logDirectory,
      containers: [],
    };
    this.#created.set(uid, real);
    const inputs = input.containers ?? [{ name: 'main', mode: 'default' as const }];
    for (const [i, container] of pod.spec!.containers.entries()) {
      const config = containerConfigFor(pod, container);
      const id = await this.#cri.createContainer(sandboxId, config, sandboxConfig, { signal, timeoutMs: 60_000 });
      await this.#cri.startContainer(id, { signal, timeoutMs: 60_000 });
      real.containers.push({ name: container.name, id, mode: inputs[i]!.mode, logPath: join(real.logDirectory, config.logPath) });
    }
    await Promise.all(real.containers.map((c) => waitUntilListening(c, signal)));
    return real;
  }

  /** Creates `count` pods concurrently. */
  createMany(count: number, input: PodInput = {}, signal?: AbortSignal): Promise<RealPod[]> {
    return Promise.all(Array.from({ length: count }, () => this.create(input, signal)));
  }

  /** Stops and removes one pod's sandbox (and so its containers); idempotent. */
  async remove(uid: string): Promise<void> {
    const real = this.#created.get(uid);
    if (!real) return;
    this.#created.delete(uid);
    await removeSandbox(this.#cri, real.sandboxId);
  }

  /** Stops and removes every pod this factory created (the test's afterEach). */
  async removeAll(): Promise<void> {
    const uids = [...this.#created.keys()];
    const results = await Promise.allSettled(uids.map((uid) => this.remove(uid)));
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed.length > 0) {
      throw new Error(`e2e cleanup: ${failed.length} pod(s) not removed: ${String(failed[0]!.reason)}`);
    }
  }
}

/**
 * Resolves once /pause has logged "started", which it does only after installing its signal
 * handlers. A SIGTERM sent before that is dropped by the kernel (the program is PID 1 of its PID
 * namespace), so a container must not be stopped earlier: it would sit out the whole grace period.
 */
async function waitUntilListening(container: RealContainer, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    signal?.throwIfAborted();
    const lines = await readContainerLog(container);
    if (lines.some((l) => l.message.includes('started mode='))) return;
    if (Date.now() >= deadline) throw new Error(`e2e: container ${container.name} (${container.id.slice(0, 12)}) did not log "started" within 15 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Pauses before a cleanup call is tried again (ms). */
const CLEANUP_RETRY_MS: readonly number[] = [250, 1_000];

/**
 * One cleanup call; "not found" counts as done, and a transient failure (cri/client/errors.ts, but for a
 * passed deadline: a runtime that took 30 s will not do better at once) is tried again twice: a
 * background podctl driver a test handed a pod to may be stopping the same sandbox in containerd
 * (killing the driver does not stop what containerd is doing for it), and two StopPodSandbox calls
 * at once can fail one of them ("ttrpc: closed", UNKNOWN) — the kubelet retries such a failure too.
 */
async function cleanupCall(call: () => Promise<void>): Promise<void> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      await call();
      return;
    } catch (err) {
      if (isNotFound(err)) return;
      const pauseMs = CLEANUP_RETRY_MS[attempt];
      if (pauseMs === undefined || !isTransient(err) || isDeadlineExceeded(err)) throw err;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }
}

/** StopPodSandbox then RemovePodSandbox (which removes the containers); "not found" counts as done. */
export async function removeSandbox(cri: CriClient, sandboxId: string): Promise<void> {
  const options = { timeoutMs: 30_000 };
  await cleanupCall(() => cri.stopPodSandbox(sandboxId, options));
  await cleanupCall(() => cri.removePodSandbox(sandboxId, options));
}

/** One line of a CRI container log: "<RFC3339Nano> <stream> <F|P> <message>". */
export interface LogLine {
  time: number;
  stream: 'stdout' | 'stderr';
  message: string;
}

export async function readContainerLog(container: RealContainer): Promise<LogLine[]> {
  let text: string;
  try {
    text = await readFile(container.logPath, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const lines: LogLine[] = [];
  for (const raw of text.split('\n')) {
    const m = /^(\S+) (stdout|stderr) [FP] (.*)$/.exec(raw);
    if (!m) continue;
    lines.push({ time: Date.parse(m[1]!), stream: m[2] as 'stdout' | 'stderr', message: m[3]! });
  }
  return lines;
}
