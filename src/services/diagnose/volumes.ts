/**
 * The kubelet's last check before a pod's final delete: no volume of the pod still mounted under
 * `<kubelet root>/pods/<uid>/volumes` (the kubelet's podVolumesExist). Read from /proc/self/mountinfo,
 * the mount table as this process sees it (the agent's pod mounts the kubelet's pods directory with
 * HostToContainer propagation, so the host's mounts show).
 *
 * Invariants: an unreadable mount table counts as "something may be mounted" (the final delete is
 * withheld, never issued on a guess); paths in mountinfo are octal-escaped (\040 for a space) and
 * are unescaped before comparing.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

const DEFAULT_KUBELET_ROOT = '/var/lib/kubelet';

/** The mount points in a mountinfo text (field 5 of each line), unescaped. */
function mountPoints(mountinfo: string): string[] {
  return mountinfo
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => p !== undefined && p !== '')
    .map((p) => p.replace(/\\([0-7]{3})/g, (_m, octal: string) => String.fromCharCode(parseInt(octal, 8))));
}

/** The pod's volume directory under the kubelet root. */
function podVolumesDir(uid: string, kubeletRoot = DEFAULT_KUBELET_ROOT): string {
  return path.join(kubeletRoot, 'pods', uid, 'volumes');
}

/**
 * The mounts still held under the pod's volume directory ([] when none); `undefined` when the mount
 * table could not be read (treat as mounted).
 */
export async function mountedPodVolumes(uid: string, kubeletRoot = DEFAULT_KUBELET_ROOT, mountinfoPath = '/proc/self/mountinfo'): Promise<string[] | undefined> {
  let text: string;
  try {
    text = await readFile(mountinfoPath, 'utf8');
  } catch {
    return undefined;
  }
  const dir = podVolumesDir(uid, kubeletRoot);
  return mountPoints(text).filter((p) => p === dir || p.startsWith(`${dir}/`));
}
