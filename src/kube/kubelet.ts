/**
 * Is a kubelet running beside podctl? Decided here, in one place, for every command.
 *
 * - `running`: its healthz (default http://127.0.0.1:10248/healthz) answers "ok" (then /proc is not
 *   read: one local connection is the whole check on a node whose kubelet runs), or else a process
 *   named kubelet exists in /proc;
 * - `down`: the healthz does not answer and /proc was read and holds no kubelet — at once, so an
 *   operator who stopped the kubelet for maintenance can act right away;
 * - where neither can be checked (healthz unreachable for another reason than a refused
 *   connection, /proc unreadable): the node's Lease in kube-node-lease decides — not renewed for
 *   40 s → `down`, renewed → `running`;
 * - else `unknown`, which every policy treats as running.
 *
 * The policy for a kill of a pod the kubelet still desires is `desiredPodPolicy`, one function.
 */
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { plainGet } from './plain-get.js';

const DEFAULT_KUBELET_HEALTHZ = 'http://127.0.0.1:10248/healthz';
/** The kubelet renews its Lease every 10 s; the node controller calls it gone after 40 s. */
const NODE_LEASE_STALE_MS = 40_000;

export type KubeletState = 'running' | 'down' | 'unknown';

export interface KubeletStatus {
  state: KubeletState;
  /** What decided it. */
  via: 'healthz' | 'process' | 'healthz+process' | 'lease' | 'none';
  /** One line: "healthz 127.0.0.1:10248 answered ok", "no kubelet process, healthz refused", … */
  detail: string;
}

export interface DetectKubeletOptions {
  /** URL or host:port[/path]; default DEFAULT_KUBELET_HEALTHZ. */
  healthz?: string;
  procRoot?: string;
  timeoutMs?: number;
  /** The node Lease's renewTime, when an API server is configured. */
  leaseRenewedAt?: () => Promise<Date | undefined>;
  now?: () => number;
}

export function healthzUrl(value: string | undefined): URL {
  const raw = value ?? DEFAULT_KUBELET_HEALTHZ;
  const url = new URL(/^[a-z]+:\/\//i.test(raw) ? raw : `http://${raw}`);
  if (url.pathname === '/' && !raw.endsWith('/')) url.pathname = '/healthz';
  return url;
}

type Probe = { answer: 'ok' | 'not-ok' | 'refused' | 'unreachable'; detail: string };

/** One GET of the healthz (src/kube/plain-get.ts: node:net, not node:http, on every start's path). */
async function probeHealthz(url: URL, timeoutMs: number): Promise<Probe> {
  try {
    const { status, body } = await plainGet(url, timeoutMs);
    return status === 200 && body.trim() === 'ok' ? { answer: 'ok', detail: `healthz ${url.host} answered ok` } : { answer: 'not-ok', detail: `healthz ${url.host} answered HTTP ${status}` };
  } catch (caught) {
    const error = caught as NodeJS.ErrnoException;
    if (error.code === 'ERR_INVALID_PROTOCOL') throw error;
    if (error.code === 'ETIMEDOUT') return { answer: 'unreachable', detail: `healthz ${url.host}: no answer within ${timeoutMs} ms` };
    return error.code === 'ECONNREFUSED' ? { answer: 'refused', detail: `healthz ${url.host} refused` } : { answer: 'unreachable', detail: `healthz ${url.host}: ${error.code ?? error.message}` };
  }
}

/** `comm` is at most 16 bytes (TASK_COMM_LEN) with its newline: "kubelet\n" fits with room to spare. */
const COMM_BYTES = 32;

/** The first bytes of `file` into `buffer`, as latin1 ('' when it cannot be read: the process ended meanwhile). */
function readShort(file: string, buffer: Buffer): string {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    return buffer.toString('latin1', 0, readSync(fd, buffer, 0, buffer.length, 0));
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

const PID = /^\d+$/;

/**
 * true: a kubelet process exists; false: /proc was read and has none; undefined: /proc unreadable.
 * Each comm is read synchronously into one buffer: three system calls per process, no promise and no
 * thread-pool round trip (the scan's CPU is on the start-up path of every kill and status), and its
 * path is put together by hand (path.join's normalisation, run once per process, was half the
 * scan's CPU at a command's start).
 */
export function kubeletProcessExists(procRoot = '/proc'): boolean | undefined {
  let entries: string[];
  try {
    entries = readdirSync(procRoot);
  } catch {
    return undefined;
  }
  const buffer = Buffer.allocUnsafe(COMM_BYTES);
  let pids = 0;
  for (const entry of entries) {
    if (!PID.test(entry)) continue;
    pids += 1;
    if (readShort(`${procRoot}/${entry}/comm`, buffer).trim() === 'kubelet') return true;
  }
  return pids === 0 ? undefined : false;
}

export async function detectKubelet(options: DetectKubeletOptions = {}): Promise<KubeletStatus> {
  const now = options.now ?? Date.now;
  const url = healthzUrl(options.healthz);
  // One cheap probe first: a healthz that answers ok settles it; /proc is read only otherwise.
  const probe = await probeHealthz(url, options.timeoutMs ?? 1_000);
  if (probe.answer === 'ok') return { state: 'running', via: 'healthz', detail: probe.detail };
  const process = kubeletProcessExists(options.procRoot);
  if (process) return { state: 'running', via: 'process', detail: `kubelet process found (${probe.detail})` };
  if (process === false && probe.answer !== 'not-ok') return { state: 'down', via: 'healthz+process', detail: `no kubelet process; ${probe.detail}` };
  // neither could be checked for sure: the node Lease, when an API server is configured
  if (options.leaseRenewedAt) {
    try {
      const renewed = await options.leaseRenewedAt();
      if (renewed) {
        const age = now() - renewed.getTime();
        return age > NODE_LEASE_STALE_MS
          ? { state: 'down', via: 'lease', detail: `node Lease not renewed for ${Math.round(age / 1000)} s (${probe.detail})` }
          : { state: 'running', via: 'lease', detail: `node Lease renewed ${Math.max(0, Math.round(age / 1000))} s ago (${probe.detail})` };
      }
    } catch (error) {
      return { state: 'unknown', via: 'none', detail: `${probe.detail}; /proc unreadable; node Lease: ${(error as Error).message}` };
    }
  }
  return { state: 'unknown', via: 'none', detail: `${probe.detail}${process === undefined ? '; /proc unreadable' : ''}` };
}

/** What to do about stopping a pod the kubelet still desires. */
export type DesiredPodAction = 'proceed' | 'refuse' | 'via-api';

/**
 * The one rule for stopping a pod the kubelet desires (bound to this node in the API, or static)
 * while a kubelet may run (running, or unknown — treated as running): it is the kubelet's pod, and a
 * container stopped under it is started again. So the stop goes through the API server when one is
 * configured (delete with the grace, or the Eviction API) and the kubelet does it; without one it is
 * refused; `--force` stops it over CRI anyway (with a warning). With the kubelet down, or for a pod it
 * does not desire, podctl acts over CRI itself.
 */
export function desiredPodPolicy(input: { kubelet: KubeletState; desired: boolean; force: boolean; viaApi: boolean; api: boolean }): DesiredPodAction {
  if (!input.desired || input.kubelet === 'down') return 'proceed';
  if (input.force) return 'proceed';
  if (input.viaApi || input.api) return 'via-api';
  return 'refuse';
}
