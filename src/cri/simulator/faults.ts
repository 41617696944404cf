/**
 * Fault injection for the simulator: per-RPC delays and error statuses, with probability and count.
 *
 * Invariants: rules are checked in order and at most one rule fires per call; a rule's count only
 * decreases when it fires; an injected delay ends early (with Cancelled) when the client cancels.
 */
import type { CriMethod, FaultRule } from './types.js';

export interface FaultDecision {
  rule: FaultRule;
  delayMs: number;
  code?: number;
  details: string;
  proceed: boolean;
}

export class FaultInjector {
  #rules: { rule: FaultRule; left: number }[] = [];
  #random: () => number;

  constructor(rules: FaultRule[] = [], random: () => number = Math.random) {
    this.#random = random;
    this.set(rules);
  }

  /** Replaces all rules (an empty list clears them). */
  set(rules: FaultRule[]): void {
    this.#rules = rules.map((rule) => ({ rule, left: rule.count ?? Number.POSITIVE_INFINITY }));
  }

  /** Appends one rule. */
  add(rule: FaultRule): void {
    this.#rules.push({ rule, left: rule.count ?? Number.POSITIVE_INFINITY });
  }

  /** The rules with their remaining counts. */
  list(): { rule: FaultRule; left: number }[] {
    return this.#rules.map((r) => ({ ...r }));
  }

  /** Decides whether a call to `method` is hit; consumes one count of the rule that fires. */
  decide(method: CriMethod): FaultDecision | undefined {
    for (const entry of this.#rules) {
      if (entry.left <= 0) continue;
      if (entry.rule.method !== '*' && entry.rule.method !== method) continue;
      const p = entry.rule.probability ?? 1;
      if (p < 1 && this.#random() >= p) continue;
      entry.left -= 1;
      return {
        rule: entry.rule,
        delayMs: entry.rule.delayMs ?? 0,
        ...(entry.rule.code !== undefined ? { code: entry.rule.code } : {}),
        details: entry.rule.details ?? `injected fault on ${method}`,
        proceed: entry.rule.proceed ?? false,
      };
    }
    return undefined;
  }
}
