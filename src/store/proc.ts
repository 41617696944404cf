/**
 * Process identity and liveness, for leases: "is the process that wrote this lease still running?"
 *
 * A PID alone is not an identity (PIDs are reused), so a lease records the owner's PID *and* its
 * start time as the kernel reports it (field 22 of /proc/<pid>/stat, clock ticks since boot). The
 * owner is alive only if a process with that PID exists, is not a zombie, and started at that same
 * tick. Where /proc is unavailable the check falls back to signal 0 (PID only).
 */
import { readFileSync } from 'node:fs';
import { errnoOf } from './errors.js';

/** Linux USER_HZ; 100 on every mainstream architecture. Only used to show a wall-clock start. */
const CLOCK_TICKS_PER_SECOND = 100;

export interface ProcessIdentity {
  pid: number;
  /** Kernel start time in clock ticks since boot (0 when /proc is unavailable). */
  startTicks: number;
  /** Start time as epoch ms (approximate to a tick; for display). */
  startedAt: number;
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
      const line = readFileSync('/proc/stat', 'utf8').split('\n').find((l) => l.startsWith('btime '));
      if (line) bootTimeMs = Number(line.slice(6)) * 1000;
    } catch {
      // No /proc: start times stay 0 and liveness falls back to signal 0.
    }
  }
  return bootTimeMs;
}

function signalZeroAlive(pid: number): boolean {
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
  return {
    pid,
    startTicks: stat.startTicks,
    startedAt: bootTime() + Math.round((stat.startTicks * 1000) / CLOCK_TICKS_PER_SECOND),
  };
}

/** A process with this PID exists and is not a zombie. */
export function isProcessAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  const stat = readProcStat(pid);
  if (stat === 'no-proc') return signalZeroAlive(pid);
  if (stat === undefined) return false;
  return stat.state !== 'Z' && stat.state !== 'X';
}

/** The process that recorded `identity` is still running (a reused PID does not count). */
export function isIdentityAlive(identity: { pid: number; startTicks: number }): boolean {
  if (!Number.isInteger(identity.pid) || identity.pid <= 0) return false;
  const stat = readProcStat(identity.pid);
  if (stat === 'no-proc') return signalZeroAlive(identity.pid);
  if (stat === undefined) return false;
  if (stat.state === 'Z' || stat.state === 'X') return false;
  return identity.startTicks === 0 || stat.startTicks === identity.startTicks;
}
