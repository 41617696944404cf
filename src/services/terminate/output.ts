/**
 * How `podctl kill` and `podctl evict` draw their result: one row per pod, one summary line. The
 * service (terminate.ts) returns a TerminateResult; the commands render it through this module.
 *
 * Invariants: pure (no session, no I/O); every pod of the result is one row.
 */
import { formatDuration } from '../../lib/duration.js';
import type { Styler, TableSpec } from '../../lib/output.js';
import { orderingNote } from '../api/pod-specs.js';
import type { PodOutcome, TerminateResult } from './terminate.js';

/** The human view of a kill/evict result: one row per pod. */
export function terminateTable(result: TerminateResult, styler: Styler): TableSpec {
  const outcomeCell = (o: PodOutcome): string =>
    o === 'terminated' || o === 'gone' || o === 'already-terminated' ? styler.green(o) : o === 'requested' || o === 'planned' ? styler.cyan(o) : styler.red(o);
  return {
    head: ['NAMESPACE/NAME', 'UID', 'OUTCOME', 'GRACE', 'TIME', 'DRIVEN BY'],
    rows: result.pods.map((p) => [
      `${p.namespace}/${p.name}`,
      p.uid.slice(0, 8),
      outcomeCell(p.outcome) + (p.error ? ` ${p.error}` : '') + (p.note ? ` (${p.note})` : ''),
      `${p.gracePeriodSeconds}s`,
      p.elapsedMs === undefined ? '-' : formatDuration(p.elapsedMs),
      result.handedOffTo?.uids.includes(p.uid)
        ? `background (${result.handedOffTo.pid})`
        : p.handledBy === undefined
          ? '-'
          : p.handledBy === 'local'
            ? `this process (${p.ownerPid})`
            : p.handledBy === 'api'
              ? 'the kubelet (API)'
              : `owner ${p.ownerPid}`,
    ]),
  };
}

/** One summary line: "kill: 3 terminated, 1 timed out; not found: default/x". */
export function terminateSummary(result: TerminateResult): string {
  const counts = new Map<PodOutcome, number>();
  for (const p of result.pods) counts.set(p.outcome, (counts.get(p.outcome) ?? 0) + 1);
  const parts = [...counts.entries()].map(([o, n]) => `${n} ${o === 'timeout' ? 'timed out' : o}`);
  const missing = result.missing.length > 0 ? `; not found: ${result.missing.join(', ')}` : '';
  const ordering = orderingNote(result.pods);
  return `${result.action}${result.dryRun ? ' --dry-run' : ''}: ${parts.join(', ')}${missing}${result.dryRun ? ' (nothing was changed)' : ''}${ordering ? `; ${ordering}` : ''}`;
}
