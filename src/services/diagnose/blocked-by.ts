/**
 * Why a pod is not finishing: one named cause and one next step for the operator, from facts
 * gathered elsewhere (the worker's view, the last runtime error, container processes in /proc,
 * mounts under the pod's kubelet directory, the API object, the kubelet). `status --explain`,
 * `status -o json` (`blockedBy`) and `watch` all classify through `blockedBy` here.
 *
 * The causes, in the order they are tried (the first that fits wins, most specific first):
 *   finalizer          every container stopped, the API object waits for its finalizers
 *   kubelet-owns       a kubelet runs beside podctl and no podctl process drives the pod
 *   undriven           no live podctl process drives its termination
 *   uninterruptible-io a container process is in state D: SIGKILL cannot help until the I/O returns
 *   stale-shim         the runtime says a container runs, but its process is gone
 *   cni-teardown       StopPodSandbox failed in the network plugin (the plugin named from the error)
 *   volume-busy        a mount under the pod's kubelet directory is still held
 *   runtime-deadline   CRI calls time out (or the runtime cannot be reached)
 *   runtime-error      the runtime rejects a call for another reason (its words are shown)
 *   grace              none of the above: it is stopping within its grace
 *
 * Invariants: pure (no I/O, no clock: `graceLeftMs` is computed by the caller); a pod that is not
 * on its way out, or has finished with nothing holding it, has no cause (null); every cause has
 * exactly one `next` step.
 */

export type BlockedKind = 'grace' | 'cni-teardown' | 'uninterruptible-io' | 'stale-shim' | 'runtime-deadline' | 'volume-busy' | 'finalizer' | 'kubelet-owns' | 'undriven' | 'runtime-error';

export const BLOCKED_KINDS: readonly BlockedKind[] = [
  'grace',
  'cni-teardown',
  'uninterruptible-io',
  'stale-shim',
  'runtime-deadline',
  'volume-busy',
  'finalizer',
  'kubelet-owns',
  'undriven',
  'runtime-error',
];

export interface BlockedBy {
  kind: BlockedKind;
  /** What holds the pod, in the node's terms. */
  detail: string;
  /** The one next step for the operator. */
  next: string;
}

/** A container process as /proc (or the simulator) shows it: state D, gone, or another state letter. */
export interface ProcessFact {
  container: string;
  containerId: string;
  pid: number;
  /** The state letter of /proc/<pid>/stat ('R', 'S', 'D', 'Z', …) or 'gone' when /proc has no such pid. */
  state: string;
}

export interface StuckFacts {
  namespace: string;
  name: string;
  /** The worker's state ('runtime' when no worker tracks it). */
  state: 'sync' | 'terminating' | 'terminated' | 'finished' | 'runtime';
  /** The API object is being deleted (deletionTimestamp set). */
  apiDeleting: boolean;
  /** The API object's finalizers (empty without an API object). */
  finalizers: readonly string[];
  /** Whether a live podctl process drives its termination (null: not terminating). */
  driven: boolean | null;
  kubeletRunning: boolean;
  gracePeriodSeconds: number | null;
  /** Grace left, ms (null when no grace counts down). */
  graceLeftMs: number | null;
  containersRunning: number;
  /** The last runtime error, as podctl recorded it ("Method: Code: details"). */
  lastError: string | null;
  /** Processes of the containers the runtime reports running (empty when not looked at). */
  processes: readonly ProcessFact[];
  /** Mount points still mounted under the pod's kubelet directory. */
  mountsHeld: readonly string[];
  /** The pod's kubelet directory (for the volume-busy step). */
  podDir: string;
}

/**
 * The last error split into its CRI method, status and text ("StopPodSandbox: Unknown: failed …"),
 * after the engine's phase prefix ("terminating: ") when there is one.
 */
export function parseRuntimeError(message: string): { method: string | null; code: string | null; text: string } {
  const m = /^(?:[a-z][a-z-]*: )?([A-Z][A-Za-z]+): ([A-Z][A-Za-z]+)(?:: ([\s\S]*))?$/.exec(message);
  if (!m) return { method: null, code: null, text: message };
  return { method: m[1] ?? null, code: m[2] ?? null, text: m[3] ?? '' };
}

const NETWORK_TEXT = /destroy network|tear ?down (the )?network|\bcni\b|network plugin|plugin type=/i;
const STALE_SHIM_TEXT = /ttrpc: closed|shim (?:is )?(?:disconnected|not found)|no such process/i;
const VOLUME_TEXT = /device or resource busy|failed to unmount|umount/i;
const DEADLINE_TEXT = /deadline exceeded|context deadline|timed out|timeout/i;

/** The network plugin named in a CNI error ("plugin type=\"calico\"" → calico). */
export function networkPluginOf(text: string): string | null {
  return /plugin type="([^"]+)"/.exec(text)?.[1] ?? /\b(calico|cilium|flannel|weave|multus|kindnet|antrea|ovn-kubernetes|bridge)\b/i.exec(text)?.[1] ?? null;
}

function seconds(ms: number): string {
  return `${Math.max(0, Math.round(ms / 1000))}s`;
}

/** Whether the pod is on its way out (or held after finishing) at all. */
function leaving(f: StuckFacts): boolean {
  if (f.state === 'terminating' || f.state === 'terminated') return true;
  if (f.apiDeleting) return true;
  return false;
}

/** The cause that holds the pod, or null when it is not on its way out or nothing holds it. */
export function blockedBy(f: StuckFacts): BlockedBy | null {
  if (!leaving(f)) return null;
  if (f.state === 'finished' || (f.containersRunning === 0 && f.state !== 'terminating')) {
    const held = finalizerCause(f);
    if (held) return held;
    if (f.state === 'finished' && f.mountsHeld.length === 0) return null;
  }
  const err = f.lastError ? parseRuntimeError(f.lastError) : undefined;
  return ownerCause(f) ?? processCause(f, err) ?? releaseCause(f, err) ?? runtimeCallCause(f, err) ?? graceCause(f);
}

type RuntimeError = ReturnType<typeof parseRuntimeError>;

/** finalizer: every container stopped and the deleted API object waits for its finalizers (else null). */
function finalizerCause(f: StuckFacts): BlockedBy | null {
  if (!f.apiDeleting || f.finalizers.length === 0) return null;
  return {
    kind: 'finalizer',
    detail: `every container stopped; the API object waits for its finalizers: ${f.finalizers.join(', ')}`,
    next: `have the controllers that own them finish (or remove a finalizer whose controller is gone): kubectl -n ${f.namespace} get pod ${f.name} -o jsonpath='{.metadata.finalizers}'`,
  };
}

/** kubelet-owns or undriven: no podctl process drives the termination (else null). */
function ownerCause(f: StuckFacts): BlockedBy | null {
  if (f.kubeletRunning && f.driven !== true) {
    return {
      kind: 'kubelet-owns',
      detail: "a kubelet runs beside podctl and no podctl process drives this pod: finishing it is the kubelet's work",
      next: `read the kubelet's log for the pod (journalctl -u kubelet | grep ${f.name}); podctl kill ${f.namespace}/${f.name} --via-api deletes it through the API, --force kills it over CRI`,
    };
  }
  if (f.driven === false) {
    return {
      kind: 'undriven',
      detail: 'no live podctl process drives its termination (the one that started it has exited), so nothing counts its grace down',
      next: 'podctl sync-known takes it over and finishes it with its remembered grace',
    };
  }
  return null;
}

/** uninterruptible-io or stale-shim: a container process in state D, or gone under a running container (else null). */
function processCause(f: StuckFacts, err: RuntimeError | undefined): BlockedBy | null {
  const dState = f.processes.find((p) => p.state === 'D');
  if (dState) {
    return {
      kind: 'uninterruptible-io',
      detail: `container ${dState.container} (pid ${dState.pid}) is in state D (uninterruptible I/O): SIGKILL cannot help until the I/O returns`,
      next: `find what pid ${dState.pid} waits on (cat /proc/${dState.pid}/stack; often an NFS server or a block device that stopped answering) and bring it back or force-unmount it`,
    };
  }
  const gone = f.processes.find((p) => p.state === 'gone');
  if (!gone && !(err && STALE_SHIM_TEXT.test(err.text))) return null;
  const what = gone ? `the runtime reports container ${gone.container} running, but its process (pid ${gone.pid}) is gone` : `the runtime cannot reach a container's shim (${f.lastError})`;
  // ctr takes a task by its full ID only (no prefixes, unlike crictl): the command is printed runnable
  const id = gone?.containerId ?? /\b[0-9a-f]{64}\b/.exec(f.lastError ?? '')?.[0];
  const remove = id
    ? `remove the stale task (ctr -n k8s.io tasks delete --force ${id})`
    : 'find the stale task (ctr -n k8s.io tasks ls) and remove it with ctr -n k8s.io tasks delete --force and its full ID';
  return {
    kind: 'stale-shim',
    detail: `${what}: a stale shim`,
    next: `${remove} or restart containerd; podctl's next retry then finishes the pod`,
  };
}

/** cni-teardown or volume-busy: the sandbox's network or a mount under the pod's directory will not let go (else null). */
function releaseCause(f: StuckFacts, err: RuntimeError | undefined): BlockedBy | null {
  if (err && (err.method === 'StopPodSandbox' || err.method === 'RemovePodSandbox') && NETWORK_TEXT.test(err.text)) {
    const plugin = networkPluginOf(err.text);
    return {
      kind: 'cni-teardown',
      detail: `${err.method} failed in the network plugin${plugin ? ` "${plugin}"` : ''}: ${err.text}`,
      next: `make the ${plugin ?? 'network'} plugin healthy on this node (its node agent pod and its CNI log, e.g. /var/log/${plugin ?? 'cni'}); podctl retries ${err.method} until it succeeds`,
    };
  }
  if (f.mountsHeld.length > 0 && f.containersRunning === 0) {
    const mount = f.mountsHeld[0] ?? f.podDir;
    return {
      kind: 'volume-busy',
      detail: `${f.mountsHeld.length} mount(s) under ${f.podDir} still held, e.g. ${mount}`,
      next: `find who holds it (fuser -vm ${mount}), stop that, then umount ${mount}`,
    };
  }
  if (err && VOLUME_TEXT.test(err.text)) {
    return {
      kind: 'volume-busy',
      detail: `${err.method ?? 'the runtime'} could not release a mount: ${err.text}`,
      next: `find who holds the mount under ${f.podDir} (fuser -vm MOUNT), stop that, then umount it`,
    };
  }
  return null;
}

/** runtime-deadline or runtime-error: the last CRI call timed out, could not reach the runtime, or was refused (else null). */
function runtimeCallCause(f: StuckFacts, err: RuntimeError | undefined): BlockedBy | null {
  if (!err) return null;
  if (err.code === 'DeadlineExceeded' || err.code === 'Unavailable' || DEADLINE_TEXT.test(err.text)) {
    return {
      kind: 'runtime-deadline',
      detail: `${err.method ?? 'a CRI call'} ${err.code === 'Unavailable' ? 'could not reach the runtime' : 'timed out'}${err.text ? `: ${err.text}` : ''}`,
      next: 'check the container runtime (systemctl status containerd; journalctl -u containerd); podctl retries with backoff',
    };
  }
  return {
    kind: 'runtime-error',
    detail: `the runtime rejects ${err.method ?? 'a call'}: ${err.text || f.lastError}`,
    next: 'fix what the runtime complains of (journalctl -u containerd); podctl retries with backoff',
  };
}

/**
 * grace: nothing else holds it; it stops within its grace, or past it the runtime kills what still
 * runs, or (every container stopped, the termination not yet done) its sandbox stop remains.
 */
function graceCause(f: StuckFacts): BlockedBy {
  const ref = `${f.namespace}/${f.name}`;
  const left = f.graceLeftMs;
  if (f.state === 'terminating' && left !== null && left > 0) {
    return {
      kind: 'grace',
      detail: `stopping within its grace: ${seconds(left)} left of ${f.gracePeriodSeconds ?? '?'}s${f.containersRunning > 0 ? `, ${f.containersRunning} container(s) still running` : ''}`,
      next: `wait, or shorten it: podctl kill ${ref} --grace 0`,
    };
  }
  return {
    kind: 'grace',
    detail:
      f.state !== 'terminating'
        ? 'every container stopped; the last clean-up step runs'
        : f.containersRunning === 0
          ? 'every container stopped; what remains is the sandbox stop (StopPodSandbox: its network and mounts) and the final check'
          : `the grace${f.gracePeriodSeconds !== null ? ` of ${f.gracePeriodSeconds}s` : ''} is over; the runtime is killing what still runs`,
    next: `wait a few seconds and look again (podctl status ${ref} --explain)`,
  };
}
