/**
 * The simulator's fault specifications as an operator writes them (`podctl simulator --fault`),
 * parsed into fault rules and container process modes. One grammar, listed by FAULT_KINDS (shown by
 * `podctl simulator --list-faults` and in its help):
 *
 *   METHOD=CODE[:MESSAGE]     every call of METHOD fails with the gRPC status CODE and MESSAGE
 *   METHOD=hang               every call of METHOD never answers (the caller's deadline ends it)
 *   METHOD=delay:SECONDS      every call of METHOD does its work, then answers SECONDS late
 *   container:NAME=stuck      containers named NAME sit in uninterruptible sleep (no signal ends them)
 *   container:NAME=vanished   containers named NAME are gone while the runtime reports them running
 *   CODE=RATE                 a share RATE (0–1) of all calls, of any method, fails with CODE
 *   delay:SECONDS[s]=RATE     a share RATE of all calls answers SECONDS late (after doing its work)
 *
 * Invariants: parsing is pure and total: a bad specification is an Error with one line saying what
 * is wrong; nothing here touches the simulator.
 */
import { GrpcStatus, type GrpcStatusName } from '../client/errors.js';
import type { CriMethod, FaultRule } from './types.js';

const FAULT_METHODS: readonly CriMethod[] = [
  'Version',
  'RunPodSandbox',
  'StopPodSandbox',
  'RemovePodSandbox',
  'PodSandboxStatus',
  'ListPodSandbox',
  'CreateContainer',
  'StartContainer',
  'StopContainer',
  'RemoveContainer',
  'ListContainers',
  'ContainerStatus',
  'ExecSync',
  'GetContainerEvents',
];

/** A call that hangs stays unanswered this long at most (the caller's deadline ends it first). */
const HANG_MS = 60 * 60 * 1000;

export type ParsedFault = { kind: 'rule'; rule: FaultRule } | { kind: 'process'; container: string; mode: 'stuck' | 'vanished' };

/** The fault kinds with an example each, for `--list-faults` and the help. */
const FAULT_KINDS: readonly { syntax: string; effect: string; example: string }[] = [
  {
    syntax: 'METHOD=CODE[:MESSAGE]',
    effect: 'every call of METHOD fails with gRPC status CODE (e.g. UNKNOWN, UNAVAILABLE, DEADLINE_EXCEEDED) and MESSAGE',
    example: 'StopPodSandbox=UNKNOWN:failed to destroy network for sandbox: plugin type="calico" failed (delete)',
  },
  { syntax: 'METHOD=hang', effect: "every call of METHOD stays unanswered until the caller's deadline", example: 'StopContainer=hang' },
  { syntax: 'METHOD=delay:SECONDS', effect: 'every call of METHOD does its work, then answers SECONDS late', example: 'StopPodSandbox=delay:3' },
  { syntax: 'container:NAME=stuck', effect: 'containers named NAME are in uninterruptible sleep (state D): SIGTERM and SIGKILL do nothing', example: 'container:postgres=stuck' },
  { syntax: 'container:NAME=vanished', effect: 'containers named NAME are gone while the runtime reports them running (a stale shim)', example: 'container:worker=vanished' },
  { syntax: 'CODE=RATE', effect: 'a share RATE (0–1) of all calls, whatever the method, fails with gRPC status CODE (a flaky runtime)', example: 'UNAVAILABLE=0.1' },
  { syntax: 'delay:SECONDS=RATE', effect: 'a share RATE (0–1) of all calls answers SECONDS late, after doing its work', example: 'delay:3s=0.05' },
];

/** A share of calls, 0 < RATE ≤ 1. */
function rateOf(text: string, spec: string): number {
  const rate = Number(text.trim());
  if (!Number.isFinite(rate) || rate <= 0 || rate > 1) throw new Error(`fault "${spec}": rate "${text}" is not a share of calls in (0, 1]`);
  return rate;
}

function codeOf(text: string): number {
  const name = text.trim().toUpperCase().replace(/-/g, '_');
  if (/^\d+$/.test(name)) {
    const n = Number(name);
    if (n > 0 && n <= 16) return n;
  } else if (name in GrpcStatus && name !== 'OK') {
    return GrpcStatus[name as GrpcStatusName];
  }
  throw new Error(
    `"${text}" is not a gRPC error status (one of ${Object.keys(GrpcStatus)
      .filter((n) => n !== 'OK')
      .join(', ')})`,
  );
}

/** Parses one `--fault` specification. */
export function parseFault(spec: string): ParsedFault {
  const eq = spec.indexOf('=');
  if (eq <= 0) throw new Error(`fault "${spec}" is not KEY=VALUE (see --list-faults)`);
  const key = spec.slice(0, eq).trim();
  const value = spec.slice(eq + 1);
  if (key.startsWith('container:')) {
    const container = key.slice('container:'.length).trim();
    const mode = value.trim();
    if (container === '') throw new Error(`fault "${spec}" names no container`);
    if (mode !== 'stuck' && mode !== 'vanished') throw new Error(`container mode "${mode}" is not stuck or vanished`);
    return { kind: 'process', container, mode };
  }
  const method = FAULT_METHODS.find((m) => m.toLowerCase() === key.toLowerCase());
  if (!method && key.startsWith('delay:')) {
    const seconds = Number(key.slice('delay:'.length).replace(/s$/, ''));
    if (!Number.isFinite(seconds) || seconds < 0) throw new Error(`"${key}" is not delay:SECONDS`);
    return { kind: 'rule', rule: { method: '*', delayMs: Math.round(seconds * 1000), proceed: true, probability: rateOf(value, spec) } };
  }
  if (!method && /^[A-Za-z_-]+$/.test(key) && key.toUpperCase().replace(/-/g, '_') in GrpcStatus) {
    return { kind: 'rule', rule: { method: '*', code: codeOf(key), details: `injected ${key.toUpperCase()} (--fault ${spec})`, probability: rateOf(value, spec) } };
  }
  if (!method) throw new Error(`"${key}" is not a CRI method the simulator serves (one of ${FAULT_METHODS.join(', ')})`);
  if (value.trim() === 'hang') return { kind: 'rule', rule: { method, delayMs: HANG_MS } };
  if (value.startsWith('delay:')) {
    const seconds = Number(value.slice('delay:'.length));
    if (!Number.isFinite(seconds) || seconds < 0) throw new Error(`"${value}" is not delay:SECONDS`);
    return { kind: 'rule', rule: { method, delayMs: Math.round(seconds * 1000), proceed: true } };
  }
  const colon = value.indexOf(':');
  const code = codeOf(colon < 0 ? value : value.slice(0, colon));
  const details = colon < 0 ? '' : value.slice(colon + 1);
  return { kind: 'rule', rule: { method, code, ...(details !== '' ? { details } : {}) } };
}

/** The fault kinds as lines of text. */
export function faultListing(): string {
  const width = Math.max(...FAULT_KINDS.map((k) => k.syntax.length));
  const lines = FAULT_KINDS.map((k) => `  ${k.syntax.padEnd(width)}  ${k.effect}\n  ${''.padEnd(width)}  e.g. --fault '${k.example}'`);
  return `Faults (--fault, repeatable; METHOD is a CRI method: ${FAULT_METHODS.join(', ')}):\n${lines.join('\n')}`;
}
