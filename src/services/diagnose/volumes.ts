/**
 * The kubelet's last check before a pod's final delete: no volume of the pod still mounted under
 * `<kubelet root>/pods/<uid>/volumes` (the kubelet's podVolumesExist). Read from /proc/self/mountinfo,
 * the mount table as this process sees it (the agent's pod mounts the kubelet's root with
 * HostToContainer propagation, so the host's mounts show).
 *
 * Invariants (fail closed: a final delete is never issued on a guess):
 * - the answer is `unknown` when the mount table cannot be read, or when the kubelet's pods
 *   directory cannot be read (absent, not a directory, not readable): a mount table says nothing
 *   about a directory this process does not see (a kubelet root elsewhere, a mount missing from
 *   the pod), so "nothing mounted" would be a pass without having looked;
 * - paths in mountinfo are octal-escaped (\040 for a space) and are unescaped before comparing.
 */
import { readdir, readFile } from '../../lib/fs-async.js';
import path from 'node:path';

const DEFAULT_KUBELET_ROOT = '/var/lib/kubelet';

/** What the volume check found for one pod. */
export type VolumeCheck = { state: 'clear' } | { state: 'mounted'; at: string[] } | { state: 'unknown'; why: string };

/** The mount points in a mountinfo text (field 5 of each line), unescaped. */
function mountPoints(mountinfo: string): string[] {
  return mountinfo
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => p !== undefined && p !== '')
    .map((p) => p.replace(/\\([0-7]{3})/g, (_m, octal: string) => String.fromCharCode(parseInt(octal, 8))));
}

/**
 * Whether a volume of the pod is still mounted under `<kubeletRoot>/pods/<uid>/volumes`: `clear`,
 * `mounted` (where), or `unknown` (why: the mount table or the kubelet's pods directory unreadable).
 */
export async function checkPodVolumes(uid: string, kubeletRoot = DEFAULT_KUBELET_ROOT, mountinfoPath = '/proc/self/mountinfo'): Promise<VolumeCheck> {
  const podsDir = path.join(kubeletRoot, 'pods');
  try {
    await readdir(podsDir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    return { state: 'unknown', why: `the kubelet's pods directory ${podsDir} cannot be read (${code}; is --kubelet-root its --root-dir, and is it mounted?)` };
  }
  let text: string;
  try {
    text = await readFile(mountinfoPath, 'utf8');
  } catch {
    return { state: 'unknown', why: 'the mount table could not be read' };
  }
  const dir = path.join(podsDir, uid, 'volumes');
  const at = mountPoints(text).filter((p) => p === dir || p.startsWith(`${dir}/`));
  return at.length > 0 ? { state: 'mounted', at } : { state: 'clear' };
}

/** Why the final delete waits, in the words status --explain and sync-known's report use; undefined when clear. */
export function volumeWithheldReason(check: VolumeCheck): string | undefined {
  if (check.state === 'mounted') return `withheld: volume still mounted at ${check.at[0]}`;
  if (check.state === 'unknown') return `withheld: volumes unknown: ${check.why}`;
  return undefined;
}
