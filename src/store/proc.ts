/**
 * Process identity and liveness, for leases: "is the process that wrote this lease still running?"
 *
 * A PID alone is not an identity (PIDs are reused), so a lease records the owner's PID *and* its
 * start time as the kernel reports it (field 22 of /proc/<pid>/stat, clock ticks since boot). The
 * owner is alive only if a process with that PID exists, is not a zombie, and started at that same
 * tick. Where /proc is unavailable the check falls back to signal 0 (PID only).
 *
 * PID namespaces: a PID means something only in its namespace (the agent's container may have its
 * own), so a lease also records the owner's PID namespace (the inode of /proc/<pid>/ns/pid). An
 * owner in another namespace is looked up through the host's view: the process whose namespace is
 * that inode and whose innermost PID (NSpid in /proc/<pid>/status) is the recorded one, with the
 * same start tick (start ticks count from boot, whatever the namespace). The take-over rule:
 * - same namespace (or none recorded, as in leases of older podctl versions): PID + start tick;
 * - another namespace that this process can see (some process of it is in our /proc): alive only
 *   if that process is found with that start tick — otherwise it is gone;
 * - another namespace none of whose processes is in our /proc, when we run in the host's (initial)
 *   PID namespace and could read the namespace of every process there (PID 1 aside: it is in ours):
 *   every process of every namespace would be there, so the namespace has no process left and the
 *   owner is gone (its last process was reaped: a heartbeat a second old must not keep it alive for
 *   15 s, while a kill is handed to it);
 * - otherwise (we run in a child namespace, the owner outside): the owner cannot be checked, so its
 *   heartbeat decides: alive while the lease file's mtime is within UNVERIFIABLE_STALE_MS;
 * - a start tick of 0 (an owner that could not read /proc) proves nothing about a PID: the heartbeat
 *   decides too (and the PID must exist where we can look).
 */
import { existsSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { errnoOf } from './errors.js';

/** Linux USER_HZ; 100 on every mainstream architecture. Only used to show a wall-clock start. */
const CLOCK_TICKS_PER_SECOND = 100;

export interface ProcessIdentity {
  pid: number;
  /** Kernel start time in clock ticks since boot (0 when /proc is unavailable). */
  startTicks: number;
  /** Start time as epoch ms (approximate to a tick; for display). */
  startedAt: number;
  /** The PID namespace the PID belongs to (inode of /proc/<pid>/ns/pid; absent when unknown). */
  pidNs?: string;
}

/** A lease owner's heartbeat older than this cannot keep an owner alive that cannot be checked. */
export const UNVERIFIABLE_STALE_MS = 15_000;

/** The PID namespace of a process as /proc shows it ("pid:[4026531836]" → "4026531836"). */
export function pidNamespaceOf(pid: number | 'self' = 'self'): string | undefined {
  try {
    const link = readlinkSync(`/proc/${pid}/ns/pid`);
    return /^pid:\[(\d+)\]$/.exec(link)?.[1];
  } catch {
    return undefined;
  }
}

let ownNamespace: { ns: string | undefined } | undefined;
/** This process's PID namespace, looked up once (a process never changes its own). */
function ownPidNamespace(): string | undefined {
  ownNamespace ??= { ns: pidNamespaceOf('self') };
  return ownNamespace.ns;
}

/** The inode of the initial (host's) PID namespace: a constant of the kernel (PROC_PID_INIT_INO). */
const INITIAL_PID_NAMESPACE = '4026531836';

/** The innermost PID of a process (last field of NSpid in /proc/<pid>/status). */
function innermostPid(hostPid: string): number | undefined {
  try {
    const line = readFileSync(`/proc/${hostPid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('NSpid:'));
    const last = line?.trim().split(/\s+/).at(-1);
    return last === undefined ? undefined : Number(last);
  } catch {
    return undefined;
  }
}

/**
 * The processes of PID namespace `ns` that this process can see, by their innermost PID (each with
 * its host-view PID); 'none' when /proc was read whole (the namespace of every process in it, PID 1
 * aside) and none is in `ns`; undefined when none was found in a /proc not read whole.
 */
function processesInNamespace(ns: string): Map<number, string> | 'none' | undefined {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return undefined;
  }
  let found: Map<number, string> | undefined;
  let whole = true;
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const itsNs = pidNamespaceOf(Number(name));
    // PID 1 is in this /proc's own namespace whatever it lets us read; a process gone meanwhile is no loss
    if (itsNs === undefined && name !== '1' && existsSync(`/proc/${name}`)) whole = false;
    if (itsNs !== ns) continue;
    const inner = innermostPid(name);
    if (inner === undefined) continue;
    (found ??= new Map()).set(inner, name);
  }
  return found ?? (whole ? 'none' : undefined);
}

interface ProcStat {
  state: string;
  startTicks: number;
}

/** Parses /proc/<pid>/stat; the command name may contain spaces and parentheses. */
export function parseProcStat(text: string): ProcStat | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = text.slice(close + 2).split(' ');
  // After "pid (comm) " the fields start at field 3 (state); starttime is field 22.
  const state = fields[0];
  const start = fields[22 - 3];
  if (state === undefined || start === undefined) return undefined;
  const startTicks = Number(start);
  return Number.isFinite(startTicks) ? { state, startTicks } : undefined;
}

function readProcStat(pid: number): ProcStat | undefined | 'no-proc' {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch (error) {
    const code = errnoOf(error);
    if (code === 'ENOENT' || code === 'ESRCH') {
      return procAvailable() ? undefined : 'no-proc';
    }
    return 'no-proc';
  }
}

let procChecked: boolean | undefined;
function procAvailable(): boolean {
  if (procChecked === undefined) {
    try {
      readFileSync('/proc/self/stat', 'utf8');
      procChecked = true;
    } catch {
      procChecked = false;
    }
  }
  return procChecked;
}

let bootTimeMs: number | undefined;
function bootTime(): number {
  if (bootTimeMs === undefined) {
    bootTimeMs = 0;
    try {
      const line = readFileSync('/proc/stat', 'utf8')
        .split('\n')
        .find((l) => l.startsWith('btime '));
      if (line) bootTimeMs = Number(line.slice(6)) * 1000;
    } catch {
      // No /proc: start times stay 0 and liveness falls back to signal 0.
    }
  }
  return bootTimeMs;
}

/** Whether process `pid` exists, by signal 0 (a process of another user counts: EPERM). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errnoOf(error) === 'EPERM';
  }
}

/** The identity of a running process (default: this one). */
export function processIdentity(pid: number = process.pid): ProcessIdentity {
  const stat = readProcStat(pid);
  if (stat === undefined || stat === 'no-proc') {
    return { pid, startTicks: 0, startedAt: pid === process.pid ? Math.round(Date.now() - process.uptime() * 1000) : 0 };
  }
  const pidNs = pidNamespaceOf(pid === process.pid ? 'self' : pid);
  return {
    pid,
    startTicks: stat.startTicks,
    startedAt: bootTime() + Math.round((stat.startTicks * 1000) / CLOCK_TICKS_PER_SECOND),
    ...(pidNs !== undefined ? { pidNs } : {}),
  };
}

/** A process with this PID exists and is not a zombie. */
export function isProcessAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  const stat = readProcStat(pid);
  if (stat === 'no-proc') return pidAlive(pid);
  if (stat === undefined) return false;
  return stat.state !== 'Z' && stat.state !== 'X';
}

export interface LivenessContext {
  /** The owner's last heartbeat (the lease file's mtime, epoch ms). */
  heartbeatAt?: number;
  now?: number;
  /** Whether we run in the host's PID namespace, where every namespace's processes are in /proc (default: looked up; tests set it). */
  seesEveryNamespace?: boolean;
  /**
   * What /proc said earlier in the same read of many leases (`procReadings()`): one look per PID
   * and namespace for the whole read, as if all were checked at its start. Never kept across reads.
   */
  readings?: ProcReadings;
}

/** /proc as one read of many leases found it (see LivenessContext.readings). */
export interface ProcReadings {
  stats: Map<number, ProcStat | undefined | 'no-proc'>;
  namespaces: Map<string, Map<number, string> | 'none' | undefined>;
}

export function procReadings(): ProcReadings {
  return { stats: new Map(), namespaces: new Map() };
}

function statOf(pid: number, readings: ProcReadings | undefined): ProcStat | undefined | 'no-proc' {
  if (readings === undefined) return readProcStat(pid);
  if (!readings.stats.has(pid)) readings.stats.set(pid, readProcStat(pid));
  return readings.stats.get(pid);
}

function namespaceOf(ns: string, readings: ProcReadings | undefined): Map<number, string> | 'none' | undefined {
  if (readings === undefined) return processesInNamespace(ns);
  if (!readings.namespaces.has(ns)) readings.namespaces.set(ns, processesInNamespace(ns));
  return readings.namespaces.get(ns);
}

function heartbeatFresh(context: LivenessContext | undefined): boolean {
  if (context?.heartbeatAt === undefined) return false;
  return (context.now ?? Date.now()) - context.heartbeatAt <= UNVERIFIABLE_STALE_MS;
}

function aliveAt(stat: ProcStat | undefined, startTicks: number, context: LivenessContext | undefined): boolean {
  if (stat === undefined) return false;
  if (stat.state === 'Z' || stat.state === 'X') return false;
  // a start tick of 0 proves nothing about a PID that may have been reused: the heartbeat decides
  if (startTicks === 0) return heartbeatFresh(context);
  return stat.startTicks === startTicks;
}

/**
 * The process that recorded `identity` is still running (a reused PID does not count, nor does a
 * PID of another namespace); see the module comment for the take-over rule.
 */
export function isIdentityAlive(identity: { pid: number; startTicks: number; pidNs?: string }, context?: LivenessContext): boolean {
  if (!Number.isInteger(identity.pid) || identity.pid <= 0) return false;
  const ours = ownPidNamespace();
  if (identity.pidNs !== undefined && ours !== undefined && identity.pidNs !== ours) {
    const visible = namespaceOf(identity.pidNs, context?.readings);
    if (visible === undefined || visible === 'none') {
      const gone = visible === 'none' && (context?.seesEveryNamespace ?? ours === INITIAL_PID_NAMESPACE);
      return gone ? false : heartbeatFresh(context);
    }
    const hostPid = visible.get(identity.pid);
    if (hostPid === undefined) return false;
    const stat = statOf(Number(hostPid), context?.readings);
    return stat !== 'no-proc' && aliveAt(stat, identity.startTicks, context);
  }
  const stat = statOf(identity.pid, context?.readings);
  if (stat === 'no-proc') return identity.startTicks === 0 ? pidAlive(identity.pid) && heartbeatFresh(context) : pidAlive(identity.pid);
  return aliveAt(stat, identity.startTicks, context);
}
