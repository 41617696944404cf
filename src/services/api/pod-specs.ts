/**
 * The pod as the API server holds it, handed to the syncer by every door that stops a pod (kill,
 * evict, drain, the watch screen, the agent's deletion follower and maintenance drain, sync-known),
 * as the kubelet's killPod always has it: its spec orders the stop (restartable init containers —
 * sidecars — after the main containers, in reverse spec order) and names the ports an httpGet
 * preStop hook refers to. Without an API server the syncer has what the kubelet wrote into the
 * runtime: each container's preStop handler, but not which containers are sidecars, so the stop is
 * parallel; a result says so (`ordering: parallel, no pod spec`).
 *
 * Invariants:
 * - A spec is the API's pod with the same UID; a mirror pod never stands for its static pod (it is
 *   not its spec).
 * - The list is bounded (API_LIST_BOUND_MS); a list that fails leaves every pod without an API spec
 *   and says why, it never stops the command.
 */
import type { V1Pod } from '../../engine/types.js';
import { isMirrorPod } from '../../engine/pod-kinds.js';
import { sidecarNames } from '../../cri/runtime/stop-order.js';
import { silentReporter, type Reporter } from '../../lib/reporter.js';
import { boundSignal } from '../../lib/abortable.js';
import type { ApiNode } from './api-node.js';

/** How long a command waits for the API server's list of this node's pods, ms. */
export const API_LIST_BOUND_MS = 5_000;
/** The same when the list only orders the stops (the kubelet is down: nothing else hangs on it), ms. */
export const SPEC_ONLY_LIST_BOUND_MS = 2_000;

/** How the containers of a pod were (or will be) stopped, as far as podctl knows its spec. */
export type StopOrdering = 'sidecars last' | 'parallel' | 'parallel, no pod spec';

/** What the API server said of this node's pods, by UID. */
export class PodSpecs {
  readonly #byUid: ReadonlyMap<string, V1Pod>;
  /** Why no API spec is known (no API server, or its list failed); undefined when it answered. */
  readonly missingBecause: string | undefined;

  constructor(pods: readonly V1Pod[] | undefined, missingBecause?: string) {
    this.#byUid = new Map((pods ?? []).filter((p) => !isMirrorPod(p) && p.metadata?.uid).map((p) => [p.metadata!.uid!, p]));
    this.missingBecause = pods === undefined ? (missingBecause ?? 'no API server is configured') : undefined;
  }

  /** No API server to ask: every pod is stopped from what the runtime recorded. */
  static none(because = 'no API server is configured'): PodSpecs {
    return new PodSpecs(undefined, because);
  }

  /** The pod as the API server holds it (same UID, not a mirror pod), or undefined. */
  of(uid: string): V1Pod | undefined {
    return this.#byUid.get(uid);
  }

  /** Every pod the API server listed (mirror pods left out). */
  all(): V1Pod[] {
    return [...this.#byUid.values()];
  }

  /** The ordering a stop of `uid` gets from the spec handed with it. */
  orderingOf(uid: string): StopOrdering {
    return orderingOf(this.of(uid));
  }
}

/** The ordering the syncer follows with this spec (undefined: none from the API server). */
export function orderingOf(spec: V1Pod | undefined): StopOrdering {
  if (spec === undefined) return 'parallel, no pod spec';
  return sidecarNames(spec).length > 0 ? 'sidecars last' : 'parallel';
}

/**
 * This node's pods as the API server holds them, listed once (bounded); without an API server, or
 * when the list fails (said on the reporter), specs that know nothing.
 */
export async function listPodSpecs(api: ApiNode | undefined, options: { signal?: AbortSignal; reporter?: Reporter; boundMs?: number } = {}): Promise<PodSpecs> {
  if (!api) return PodSpecs.none();
  try {
    return new PodSpecs(await api.kube.listNodePods(boundSignal(options.boundMs ?? API_LIST_BOUND_MS, options.signal)));
  } catch (error) {
    const because = `the API server's list failed: ${(error as Error).message}`;
    (options.reporter ?? silentReporter()).warn(`${because}; pods are stopped from what the runtime recorded (no sidecar ordering)`);
    return PodSpecs.none(because);
  }
}

/** The text output's word on stops podctl made without a pod spec (none when every stop had one). */
export function orderingNote(pods: readonly { namespace: string; name: string; ordering?: StopOrdering }[]): string | undefined {
  const blind = pods.filter((p) => p.ordering === 'parallel, no pod spec');
  if (blind.length === 0) return undefined;
  const which = blind.length === pods.length ? '' : ` for ${blind.map((p) => `${p.namespace}/${p.name}`).join(', ')}`;
  return `ordering: parallel, no pod spec${which} (no API server's spec: sidecars, if any, were not stopped after the main containers)`;
}
