/**
 * The one vocabulary of podctl's JSON: what every command's `--json` / `-o json` result and every
 * JSON stream (`watch`, `status -w`) says, in the same words.
 *
 * Owns: the pod state names, the time format, and the "missing is null" rule. Pure helpers, no I/O.
 *
 * Invariants:
 * - A pod's state is one of POD_STATES: the kubelet's pod-worker states `sync`, `terminating`,
 *   `terminated`, plus `finished` (the terminated step completed) and `runtime` (in the runtime, no
 *   worker has ever tracked it). Tables may word them for people (`sync` shows as `running`); JSON
 *   never does.
 * - A point in time is an ISO 8601 string in UTC with milliseconds (`2026-11-25T19:16:04.000Z`);
 *   a length of time is a number whose key names its unit (`elapsedMs`, `gracePeriodSeconds`).
 *   No field holds epoch milliseconds.
 * - A documented field without a value is `null`, never absent, so every record of a kind has the
 *   same keys whatever the pod's state.
 * - Error records name their error with `errors.ts`'s ERROR_NAMES.
 */

/** The pod states of every JSON output, in lifecycle order. */
export const POD_STATES = ['runtime', 'sync', 'terminating', 'terminated', 'finished'] as const;

/** An instant (epoch ms) as the JSON outputs write it. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

/** An optional instant: ISO 8601, or null. */
export function isoOrNull(ms: number | null | undefined): string | null {
  return ms === undefined || ms === null || !Number.isFinite(ms) ? null : new Date(ms).toISOString();
}

/** Fields of `T` that are optional become `T[K] | null` and present. */
export type WithNulls<T, K extends keyof T> = Omit<T, K> & { [P in K]-?: Exclude<T[P], undefined> | null };

/**
 * `value` with every key of `keys` present: undefined becomes null. Other keys are kept as they
 * are, in their order; the keys added come last.
 */
export function withNulls<T extends object, K extends keyof T>(value: T, keys: readonly K[]): WithNulls<T, K> {
  const out: Record<PropertyKey, unknown> = { ...(value as Record<PropertyKey, unknown>) };
  for (const key of keys) if (out[key] === undefined) out[key] = null;
  return out as WithNulls<T, K>;
}
