/**
 * Who the agent is on its node: the pod it runs in, which it never stops or drains (by `POD_UID`
 * from the downward API, else by the container ID in its cgroup).
 */
import { readFile } from 'node:fs/promises';
import type { PodInfo } from '../../domain/session-api.js';

/** The pod this agent runs in, never a target of its own. */
export interface AgentSelf {
  /** Its pod's UID (POD_UID, from the downward API in deploy/daemonset.yaml). */
  podUid?: string;
  /** The container ID in its cgroup path: the fallback without POD_UID. */
  containerId?: string;
}

/**
 * Who the agent is: `POD_UID` when set (the DaemonSet gives it), else the container ID read from its
 * cgroup. In a private cgroup namespace (cgroup v2) that file reads `0::/`: no ID, and without
 * POD_UID the agent does not know its pod.
 */
export async function agentSelf(env: NodeJS.ProcessEnv = process.env, cgroupPath = '/proc/self/cgroup'): Promise<AgentSelf> {
  const podUid = env.POD_UID?.trim();
  if (podUid) return { podUid };
  const containerId = await selfContainerId(cgroupPath);
  return containerId ? { containerId } : {};
}

/** Is this the agent's own pod? By its UID, else by its container; undefined when the agent does not know. */
export function isSelfPod(self: AgentSelf): ((pod: PodInfo) => boolean) | undefined {
  const { podUid, containerId } = self;
  if (podUid) return (pod) => pod.uid === podUid;
  if (containerId) return (pod) => pod.runtime?.containerStatuses.some((c) => c.id === containerId || c.id.startsWith(containerId)) === true;
  return undefined;
}

/** The container ID this process runs in, from its cgroup path (containerd, cri-o, docker), if any. */
export async function selfContainerId(cgroupPath = '/proc/self/cgroup'): Promise<string | undefined> {
  try {
    const text = await readFile(cgroupPath, 'utf8');
    return /([0-9a-f]{64})/.exec(text)?.[1];
  } catch {
    return undefined;
  }
}
