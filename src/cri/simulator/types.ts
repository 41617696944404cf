/**
 * Types shared by the embedded CRI simulator's model, server, seeding and tests, and the model's
 * one error (`SimError`, which the server turns into a gRPC status).
 */
import type { V1LifecycleHandler } from '@kubernetes/client-node';
import type { RestartPolicy } from '../client/kubelet-labels.js';

/**
 * What a simulated container does on SIGTERM (the same three behaviours as the test image's
 * /pause program): exit 0 at once, ignore it (only the SIGKILL at the stop timeout ends it), or
 * exit 0 a number of seconds after the first SIGTERM.
 */
export type SigtermBehaviour = 'exit' | 'ignore' | { exitAfterSeconds: number };

/** The RPCs the simulator serves (proto names). */
export type CriMethod =
  | 'Version'
  | 'RunPodSandbox'
  | 'StopPodSandbox'
  | 'RemovePodSandbox'
  | 'PodSandboxStatus'
  | 'ListPodSandbox'
  | 'CreateContainer'
  | 'StartContainer'
  | 'StopContainer'
  | 'RemoveContainer'
  | 'ListContainers'
  | 'ContainerStatus'
  | 'ExecSync'
  | 'GetContainerEvents';

/**
 * One fault-injection rule. A call to `method` (or any method for '*') is affected while the rule
 * has count left, with the given probability: it is delayed by `delayMs`, then fails with `code`
 * (a gRPC status) unless no code is set. With `proceed`, the operation still takes effect before
 * the error is returned (a runtime that did the work but answered late, as in containerd's
 * StopContainer DeadlineExceeded reports).
 */
export interface FaultRule {
  method: CriMethod | '*';
  code?: number;
  details?: string;
  delayMs?: number;
  /** 0..1, default 1. */
  probability?: number;
  /** How many times the rule fires; default unlimited. */
  count?: number;
  proceed?: boolean;
}

export interface SimContainerSpec {
  name: string;
  /** Default 'exit'. */
  onSigterm?: SigtermBehaviour;
  preStop?: V1LifecycleHandler;
  restartCount?: number;
  /** Default 'running'. An exited container gets `exitCode` (default 0). */
  state?: 'created' | 'running' | 'exited';
  exitCode?: number;
  image?: string;
  /** The simulated process: 'stuck' (state D, no signal ends it) or 'vanished' (a stale shim). Default 'normal'. */
  process?: 'normal' | 'stuck' | 'vanished';
}

/** A pod the simulator creates as a kubelet would (labels, annotations and all). */
export interface SimPodSpec {
  name: string;
  /** Default 'default'. */
  namespace?: string;
  /** Default: a random UUID. */
  uid?: string;
  /** Default: one container 'main' that exits on SIGTERM. */
  containers?: SimContainerSpec[];
  /** Default 30. */
  terminationGracePeriodSeconds?: number;
  deletionGracePeriodSeconds?: number;
  static?: boolean;
  restartPolicy?: RestartPolicy;
  priority?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  hostNetwork?: boolean;
}

/** Timestamps for the model (epoch ms); timers always run on real time scaled by `timeScale`. */
export interface SimClock {
  now(): number;
}

/** One entry of the simulator's journal: what was called and what happened to which container. */
export type SimRecord =
  | { at: number; kind: 'rpc'; method: CriMethod; id?: string; detail?: string }
  | { at: number; kind: 'signal'; id: string; signal: 'SIGTERM' | 'SIGKILL' }
  | { at: number; kind: 'exit'; id: string; exitCode: number }
  | { at: number; kind: 'exec'; id: string; cmd: string[]; exitCode: number }
  | { at: number; kind: 'fault'; method: CriMethod; code?: number; delayMs?: number };

/** An error the server turns into a gRPC status. */
export class SimError extends Error {
  readonly code: number;
  constructor(code: number, details: string) {
    super(details);
    this.code = code;
  }
}
