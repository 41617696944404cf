/**
 * The simulated container process: what it does on SIGTERM, and the faults injected into it
 * (`simulator --fault container:NAME=MODE`, or the `podctl.io/sim-process` annotation) to produce
 * stuck pods.
 *
 * Invariants: a container's SIGTERM behaviour and its process mode are read from its config alone
 * (annotations first, then the command line, as the test image's /pause reads it); anything not
 * understood is the normal process that exits on SIGTERM. A simulated pid never names a real process.
 */
import type { ContainerConfig } from '../client/generated/runtime_v1.js';
import { GrpcStatus } from '../client/errors.js';
import { SimError, type SigtermBehaviour } from './types.js';

const ANN_SIM_SIGTERM = 'podctl.io/sim-sigterm';
/** A container's simulated process mode ('stuck' | 'vanished'), see ProcessMode. */
export const ANN_SIM_PROCESS = 'podctl.io/sim-process';
/** Above the kernel's largest pid_max (2^22): a simulated pid never names a real process. */
export const SIM_PID_BASE = 4_194_400;

/**
 * The simulated container process, for producing stuck pods:
 * - normal: it follows its SIGTERM behaviour and dies on SIGKILL;
 * - stuck: in uninterruptible sleep (state D): no signal ends it, so StopContainer never returns
 *   (the client's deadline ends the call) and the sandbox stop cannot kill it;
 * - vanished: the process is gone but the runtime still reports it running (a stale shim):
 *   StopContainer and StopPodSandbox fail as containerd's do when the shim's connection is closed.
 * ContainerStatus(verbose) reports the pid and the process state ('S', 'D', or 'gone') in its
 * info, as containerd reports the pid.
 */
export type ProcessMode = 'normal' | 'stuck' | 'vanished';

/** A container's process mode from its annotation (normal when absent or not understood). */
export function processModeOf(config: Pick<ContainerConfig, 'annotations'>): ProcessMode {
  const ann = config.annotations?.[ANN_SIM_PROCESS];
  return ann === 'stuck' || ann === 'vanished' ? ann : 'normal';
}

/** What containerd answers when a stale shim's connection is closed. */
export function staleShimError(id: string, what: string): SimError {
  return new SimError(GrpcStatus.UNKNOWN, `failed to ${what} "${id}": ttrpc: closed: unknown`);
}

/** Reads a SIGTERM behaviour from a container's annotations and command line. */
export function behaviourOf(config: Pick<ContainerConfig, 'command' | 'args' | 'annotations'>): SigtermBehaviour {
  const ann = config.annotations?.[ANN_SIM_SIGTERM];
  if (ann !== undefined) {
    if (ann === 'ignore') return 'ignore';
    if (ann === 'exit') return 'exit';
    const n = Number(ann);
    if (Number.isFinite(n) && n >= 0) return { exitAfterSeconds: n };
  }
  const argv = [...(config.command ?? []), ...(config.args ?? [])];
  const at = argv.findIndex((a) => a === 'pause' || a.endsWith('/pause'));
  const rest = at >= 0 ? argv.slice(at + 1) : argv;
  if (rest[0] === 'ignore') return 'ignore';
  if (rest[0] === 'graceful') {
    const n = Number(rest[1]);
    if (Number.isFinite(n) && n >= 0) return { exitAfterSeconds: n };
  }
  return 'exit';
}
