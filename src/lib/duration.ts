/**
 * Durations on the command line: `90s`, `2m`, `1m30s`, `500ms`, `1h`, or a bare number of seconds.
 *
 * Invariants: a value that does not parse is a UsageError naming the flag, never a silent default;
 * a value past MAX_DURATION_MS (a year) is a UsageError naming the maximum.
 */
import { MAX_GRACE_SECONDS } from '../engine/grace.js';
import { UsageError } from './errors.js';

/** The longest duration any flag accepts: a year, as the longest grace period (engine/grace.ts). */
const MAX_DURATION_MS = MAX_GRACE_SECONDS * 1000;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds for a duration string; `flag` names the flag in the error. */
export function parseDuration(text: string, flag: string): number {
  const ms = parseDurationUnbounded(text, flag);
  if (!(ms <= MAX_DURATION_MS)) throw new UsageError(`--${flag}: "${text}" is past the maximum of ${MAX_DURATION_MS / 3_600_000}h (a year)`, 'give a shorter duration');
  return ms;
}

function parseDurationUnbounded(text: string, flag: string): number {
  const value = text.trim();
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  const part = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (let match = part.exec(value); match; match = part.exec(value)) {
    total += Number(match[1]) * (UNIT_MS[match[2] ?? 's'] ?? 1000);
    consumed = part.lastIndex;
  }
  if (consumed === 0 || consumed !== value.length) {
    throw new UsageError(`--${flag}: "${text}" is not a duration`, 'use e.g. 30s, 2m, 1m30s, 500ms or a number of seconds');
  }
  return Math.round(total);
}

/**
 * Whole seconds for a grace or a budget, given as a number of seconds or a duration string (`45`,
 * `45s`, `2m`, `1m30s`): the one rule of every such flag. A part of a second is a UsageError naming
 * the flag (grace periods are whole seconds, as in Kubernetes).
 */
export function parseSeconds(text: string, flag: string): number {
  const ms = parseDuration(text, flag);
  if (ms % 1000 !== 0) throw new UsageError(`--${flag}: "${text}" is not a whole number of seconds`, 'give whole seconds, e.g. 5, 5s or 1m30s');
  return ms / 1000;
}

/** Short human form: `850ms`, `12s`, `3m05s`, `1h02m`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  const negative = ms < 0;
  const abs = Math.abs(ms);
  let text: string;
  if (abs < 1000) text = `${Math.round(abs)}ms`;
  else if (abs < 60_000) text = `${Math.floor(abs / 1000)}s`;
  else if (abs < 3_600_000) {
    const s = Math.floor(abs / 1000);
    text = `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  } else {
    const m = Math.floor(abs / 60_000);
    text = `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
  }
  return negative ? `-${text}` : text;
}
