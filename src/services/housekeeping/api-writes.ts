/**
 * The agent's API writes, enabled only while the node restriction is in force: before its first
 * write the agent checks (kube/node-restriction.ts) that its token is bound to its node and that
 * the ValidatingAdmissionPolicy confining it there is in force, and opens or shuts the client's
 * write gate accordingly; then again every `everyMs` while writes are enabled (the policy and its
 * binding only: 2 GETs) and every `retryEveryMs` while they are withheld (the whole check). `--unrestricted-api-writes` opens it without
 * the check's consent (said loudly, and counted in metrics).
 *
 * Invariants:
 * - The gate is shut from the start (the agent's client is made with it shut) until a check says
 *   yes; any check that cannot say yes shuts it again at once (fail closed).
 * - Only a check that said yes lets the next one skip the token's claim; any "no" makes the next
 *   check whole again.
 * - Each change is said once: why writes are withheld and how to fix it, or that they are enabled
 *   again. The same verdict repeated says nothing.
 * - `podctl_api_writes_enabled` follows the gate; `podctl_api_writes_unrestricted` is 1 under the flag.
 */
import { checkNodeRestriction, type RestrictionVerdict } from '../../kube/node-restriction.js';
import { formatDuration } from '../../lib/duration.js';
import type { Reporter } from '../../lib/reporter.js';
import type { PodctlMetrics } from '../../metrics/registry.js';
import type { ApiNode } from '../api/api-node.js';
import type { AgentHealth } from './agent-health.js';

/** How often the agent checks the node restriction again while writes are enabled (a policy deleted later shuts the gate). */
const WRITE_CHECK_EVERY_MS = 600_000;
/** How often while writes are withheld (a policy applied later opens the gate within this). */
const WRITE_RETRY_EVERY_MS = 60_000;

export interface ApiWritesOptions {
  api: ApiNode;
  /** Writes without the node restriction's consent (`--unrestricted-api-writes`). */
  unrestricted: boolean;
  /** While writes are enabled; default `WRITE_CHECK_EVERY_MS`. */
  everyMs?: number | undefined;
  /** While writes are withheld; default the shorter of `everyMs` and `WRITE_RETRY_EVERY_MS`. */
  retryEveryMs?: number | undefined;
  metrics: PodctlMetrics;
  /** /healthz and /readyz: `api-writes` enabled or withheld (degraded, still ready). */
  health: Pick<AgentHealth, 'set'>;
  reporter: Reporter;
  now: () => number;
}

/** Shuts the client's write gate (no write before the first check says yes) and returns what checks it. */
export function startApiWrites(options: ApiWritesOptions): ApiWrites {
  options.api.kube.writes.withhold('the node restriction has not been checked yet');
  options.health.set('api-writes', 'withheld', false, 'the node restriction has not been checked yet');
  return new ApiWrites(options);
}

export class ApiWrites {
  readonly #options: ApiWritesOptions;
  #checkedAt: number | undefined;
  /** The last check said yes: the token's claim need not be asked again. */
  #identityConfirmed = false;
  /** What was said last (a verdict's text), so that the same one is not said again. */
  #said: string | undefined;

  constructor(options: ApiWritesOptions) {
    this.#options = options;
    options.metrics.setApiWrites({ enabled: false, unrestricted: options.unrestricted });
    if (options.unrestricted) {
      options.reporter.warn(
        'agent: --unrestricted-api-writes: API writes are enabled whether or not the node restriction is in force; without it this token may delete any pod and patch any Node its RBAC allows',
      );
    }
  }

  /** Are API writes enabled now? */
  get enabled(): boolean {
    return this.#options.api.kube.writes.open;
  }

  /**
   * Checks when due (always the first time); resolves once the gate follows the verdict, with true
   * when it has just opened (what was withheld may be done now).
   */
  async checkWhenDue(signal: AbortSignal): Promise<boolean> {
    const { now } = this.#options;
    const dueAfter = this.#identityConfirmed ? this.#everyMs : this.#retryEveryMs;
    if (this.#checkedAt !== undefined && now() - this.#checkedAt < dueAfter) return false;
    const wasOpen = this.enabled;
    this.#checkedAt = now();
    // an abort (the agent stopping) ends the check quietly; the gate stays as it was
    const verdict = await checkNodeRestriction(this.#options.api.kube, signal, { identityConfirmed: this.#identityConfirmed }).catch((error: unknown) => {
      if (signal.aborted) return undefined;
      throw error;
    });
    if (verdict && !signal.aborted) {
      this.#identityConfirmed = verdict.inForce;
      this.#follow(verdict);
    }
    return !wasOpen && this.enabled;
  }

  get #everyMs(): number {
    return this.#options.everyMs ?? WRITE_CHECK_EVERY_MS;
  }

  get #retryEveryMs(): number {
    return this.#options.retryEveryMs ?? Math.min(this.#everyMs, WRITE_RETRY_EVERY_MS);
  }

  #follow(verdict: RestrictionVerdict): void {
    const { api, metrics, reporter, unrestricted, health } = this.#options;
    const gate = api.kube.writes;
    const say = (text: string, warn: boolean): void => {
      if (this.#said === text) return;
      this.#said = text;
      if (warn) reporter.warn(text);
      else reporter.info(text);
    };
    if (verdict.inForce) {
      gate.allow();
      say(`agent: API writes enabled: ${verdict.detail}`, false);
    } else if (unrestricted) {
      gate.allow();
      say(`agent: the node restriction is not in force (${verdict.reason}); API writes go on unrestricted (--unrestricted-api-writes)`, true);
    } else {
      gate.withhold(`the node restriction is not in force: ${verdict.reason}`);
      say(
        `agent: API writes disabled: the node restriction is not in force: ${verdict.reason}. Fix: ${verdict.fix} (or run with --unrestricted-api-writes). ` +
          `Until then no eviction, delete, status patch, cordon or Event is sent and maintenance requests wait; housekeeping on this node goes on; checked again every ${formatDuration(this.#retryEveryMs)}`,
        true,
      );
    }
    metrics.setApiWrites({ enabled: gate.open, unrestricted });
    health.set('api-writes', gate.open ? (unrestricted && !verdict.inForce ? 'unrestricted' : 'enabled') : 'withheld', gate.open, gate.reason ?? (verdict.inForce ? verdict.detail : verdict.reason));
  }
}
