/**
 * The node facts blocked-by.ts classifies from, gathered for the pods that are not finishing: the
 * processes of the containers the runtime reports running (pid from ContainerStatus(verbose), state
 * letter from /proc/<pid>/stat) and the mounts still held under each pod's kubelet directory
 * (/proc/self/mountinfo).
 *
 * Invariants: best effort and bounded: a runtime that does not answer within FACTS_TIMEOUT_MS, an
 * unreadable /proc or a container without a pid yields fewer facts, never an error or a wait
 * beyond the bound. The simulator reports its simulated process state in the verbose info
 * (`simProcessState`); that is trusted only from a simulated runtime.
 */
import { readFile } from '../../lib/fs-async.js';
import path from 'node:path';
import type { ProcessFact } from './blocked-by.js';

const FACTS_TIMEOUT_MS = 2_000;
/** The kubelet's root directory; PODCTL_KUBELET_DIR overrides it (a kubelet run with --root-dir). */
function kubeletDir(): string {
  return process.env.PODCTL_KUBELET_DIR || '/var/lib/kubelet';
}

export function podDirOf(uid: string): string {
  return path.join(kubeletDir(), 'pods', uid);
}

/** The state letter in /proc/<pid>/stat (the field after the parenthesised command), or 'gone'. */
export function procStateOf(stat: string): string {
  const close = stat.lastIndexOf(')');
  const letter = close >= 0 ? stat.slice(close + 2, close + 3) : '';
  return letter === '' ? 'gone' : letter;
}

async function readProcState(pid: number, procRoot = '/proc'): Promise<string> {
  try {
    return procStateOf(await readFile(path.join(procRoot, String(pid), 'stat'), 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ESRCH') return 'gone';
    throw error;
  }
}

/** The mount points of a mountinfo text (each line's fifth field, octal escapes decoded), in order. */
export function mountPointsOf(mountinfo: string): string[] {
  const out: string[] = [];
  for (const line of mountinfo.split('\n')) {
    const field = line.split(' ')[4];
    if (field) out.push(field.includes('\\') ? field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8))) : field);
  }
  return out;
}

/**
 * The mount points at or under `dir`. The mountinfo is parsed once for all the pods looked at
 * (`mountPointsOf`): a node's mountinfo has a line per volume of every pod.
 */
export function mountsUnder(points: readonly string[], dir: string): string[] {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return points.filter((point) => point === dir || point.startsWith(prefix));
}

export async function readMountinfo(): Promise<string> {
  try {
    return await readFile('/proc/self/mountinfo', 'utf8');
  } catch {
    return '';
  }
}

/** The pid and (simulator only) process state in a ContainerStatus verbose info map. */
export function pidOfInfo(info: Record<string, string> | undefined): { pid?: number; simState?: string } {
  const raw = info?.info;
  if (!raw) return {};
  try {
    const parsed = JSON.parse(raw) as { pid?: unknown; simProcessState?: unknown };
    return {
      ...(typeof parsed.pid === 'number' && parsed.pid > 0 ? { pid: parsed.pid } : {}),
      ...(typeof parsed.simProcessState === 'string' ? { simState: parsed.simProcessState } : {}),
    };
  } catch {
    return {};
  }
}

export interface RunningContainerRef {
  uid: string;
  id: string;
  name: string;
}

/**
 * The processes of these running containers, by pod UID. One CRI connection for all; each
 * container's facts are skipped when the runtime or /proc does not answer in time.
 */
export async function gatherProcessFacts(
  endpoint: string,
  containers: readonly RunningContainerRef[],
  options: { simulated: boolean; signal?: AbortSignal; procRoot?: string },
): Promise<Map<string, ProcessFact[]>> {
  const out = new Map<string, ProcessFact[]>();
  if (containers.length === 0) return out;
  const { connectCri } = await import('../../cri/client/client.js');
  const client = await connectCri({ endpoint, timeoutMs: FACTS_TIMEOUT_MS });
  try {
    await Promise.all(
      containers.map(async (c) => {
        try {
          const res = await client.containerStatus(c.id, { verbose: true, ...(options.signal ? { signal: options.signal } : {}) });
          const { pid, simState } = pidOfInfo(res.info);
          if (pid === undefined) return;
          const state = options.simulated && simState !== undefined ? simState : await readProcState(pid, options.procRoot);
          const list = out.get(c.uid) ?? [];
          list.push({ container: c.name, containerId: c.id, pid, state });
          out.set(c.uid, list);
        } catch {
          // no facts for this container
        }
      }),
    );
  } finally {
    client.close();
  }
  return out;
}
