/**
 * Whether podctl's API writes are confined to its own node, as deploy/ means them to be: the
 * agent's token carries the node-name claim of its node (SelfSubjectReview), and the
 * ValidatingAdmissionPolicy that checks that claim is in force with its binding (read by name).
 * And the gate every API write of the client passes (`WriteGate`): the agent keeps it shut until
 * this check says yes, and shuts it again when a later check says no.
 *
 * Invariants:
 * - Fail closed: anything the check cannot confirm (a missing object, a read refused, an API
 *   server that does not answer, an answer it does not understand) is a "no", with the reason and
 *   the fix in one line each.
 * - Only reads: a SelfSubjectReview (a question, stored nowhere), discovery, and `get` of exactly
 *   the two objects named `NODE_RESTRICTION` (deploy/clusterrole.yaml grants nothing more).
 */
import { KubeError } from './errors.js';

/** The ValidatingAdmissionPolicy and its binding in deploy/validating-admission-policy.yaml. */
const NODE_RESTRICTION = 'podctl-node-restriction';
/** The extra the API server puts on a projected, node-bound ServiceAccount token (Kubernetes ≥ 1.32). */
const NODE_NAME_CLAIM = 'authentication.kubernetes.io/node-name';

/** The reads the check needs (KubeClient has them). */
export interface RestrictionReads {
  readonly node: string;
  /** Who the API server says the credentials are (authentication.k8s.io/v1 SelfSubjectReview). */
  selfSubject(signal?: AbortSignal): Promise<{ username: string; extra: Record<string, string[]> }>;
  /** Does the API server serve ValidatingAdmissionPolicies in admissionregistration.k8s.io/v1? */
  servesAdmissionPolicies(signal?: AbortSignal): Promise<boolean>;
  /** A ValidatingAdmissionPolicy or its binding by name; undefined when there is none. */
  getAdmissionObject(resource: 'validatingadmissionpolicies' | 'validatingadmissionpolicybindings', name: string, signal?: AbortSignal): Promise<AdmissionObject | undefined>;
}

export interface AdmissionObject {
  metadata?: { name?: string; deletionTimestamp?: string };
  spec?: { policyName?: string; validationActions?: string[]; failurePolicy?: string; paramRef?: unknown; matchResources?: unknown };
}

export type RestrictionVerdict = { inForce: true; detail: string } | { inForce: false; reason: string; fix: string };

const APPLY = 'apply deploy/ in full (kubectl apply -k deploy/)';

export interface RestrictionCheckOptions {
  /**
   * The token's node claim and the API server's admissionregistration/v1 were confirmed by an
   * earlier check of this process (neither changes while it runs: a rotated projected token keeps
   * its pod's node): only the policy and its binding are read again (2 GETs instead of 4).
   */
  identityConfirmed?: boolean;
}

type No = (reason: string, fix: string) => RestrictionVerdict;

/** Checks, in order: the token's node claim, then the policy and its binding. */
export async function checkNodeRestriction(kube: RestrictionReads, signal?: AbortSignal, options: RestrictionCheckOptions = {}): Promise<RestrictionVerdict> {
  const no: No = (reason, fix) => ({ inForce: false, reason, fix });
  try {
    const identity = options.identityConfirmed ? undefined : await checkIdentity(kube, no, signal);
    return identity ?? (await checkPolicy(kube, no, signal));
  } catch (error) {
    if (signal?.aborted) throw error;
    const forbidden = error instanceof KubeError && error.statusCode === 403;
    return no(
      `the check could not be made: ${(error as Error).message}`,
      forbidden ? 'apply deploy/clusterrole.yaml as shipped (it grants the reads the check makes)' : 'the check is made again shortly',
    );
  }
}

/** The token's node claim and the served API group: a "no", or undefined when both hold. */
async function checkIdentity(kube: RestrictionReads, no: No, signal?: AbortSignal): Promise<RestrictionVerdict | undefined> {
  const self = await kube.selfSubject(signal);
  const claim = self.extra[NODE_NAME_CLAIM];
  if (!claim || claim.length === 0) {
    return no(
      `the token of ${self.username} carries no node claim (${NODE_NAME_CLAIM})`,
      'mount a projected ServiceAccount token as deploy/daemonset.yaml does (the API server binds it to the node from Kubernetes 1.32)',
    );
  }
  if (claim.length !== 1 || claim[0] !== kube.node) {
    return no(`the token is bound to node ${claim.join(', ')}, not to --node ${kube.node}`, 'pass --node=$(NODE_NAME) from the downward API (spec.nodeName), as deploy/daemonset.yaml does');
  }
  if (!(await kube.servesAdmissionPolicies(signal))) {
    return no('the API server does not serve ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, Kubernetes 1.30 and later)', 'upgrade the cluster to Kubernetes 1.32 or later');
  }
  return undefined;
}

/** The policy and its binding, read by name. */
async function checkPolicy(kube: RestrictionReads, no: No, signal?: AbortSignal): Promise<RestrictionVerdict> {
  const policy = await kube.getAdmissionObject('validatingadmissionpolicies', NODE_RESTRICTION, signal);
  if (!policy || policy.metadata?.deletionTimestamp) return no(`ValidatingAdmissionPolicy ${NODE_RESTRICTION} is not there`, APPLY);
  if (policy.spec?.failurePolicy === 'Ignore') return no(`ValidatingAdmissionPolicy ${NODE_RESTRICTION} has failurePolicy Ignore (it does not fail closed)`, APPLY);
  const binding = await kube.getAdmissionObject('validatingadmissionpolicybindings', NODE_RESTRICTION, signal);
  if (!binding || binding.metadata?.deletionTimestamp) return no(`ValidatingAdmissionPolicyBinding ${NODE_RESTRICTION} is not there (the policy is not in force)`, APPLY);
  if (binding.spec?.policyName !== NODE_RESTRICTION) {
    return no(`ValidatingAdmissionPolicyBinding ${NODE_RESTRICTION} binds ${binding.spec?.policyName ?? 'no policy'}, not ${NODE_RESTRICTION}`, APPLY);
  }
  const actions = binding.spec.validationActions ?? [];
  if (!actions.includes('Deny')) return no(`ValidatingAdmissionPolicyBinding ${NODE_RESTRICTION} does not deny (validationActions: ${actions.join(', ') || 'none'})`, APPLY);
  if (binding.spec.matchResources !== undefined || binding.spec.paramRef !== undefined) {
    return no(`ValidatingAdmissionPolicyBinding ${NODE_RESTRICTION} narrows what the policy covers (matchResources or paramRef)`, APPLY);
  }
  return { inForce: true, detail: `token bound to node ${kube.node}; ValidatingAdmissionPolicy ${NODE_RESTRICTION} in force (Deny)` };
}

/**
 * The gate every API write of a client passes. Open by default (a command run by an operator);
 * the agent shuts it before its first write and opens it only when the node restriction is in force.
 */
export class WriteGate {
  #reason: string | undefined;

  constructor(closedBecause?: string) {
    this.#reason = closedBecause;
  }

  get open(): boolean {
    return this.#reason === undefined;
  }

  /** Why writes are withheld (undefined while open). */
  get reason(): string | undefined {
    return this.#reason;
  }

  allow(): void {
    this.#reason = undefined;
  }

  withhold(reason: string): void {
    this.#reason = reason;
  }

  /** Throws the withheld error when shut (called by the client before each write). */
  check(call: string): void {
    if (this.#reason !== undefined) throw new KubeError(call, `${call}: API writes are withheld: ${this.#reason}`, undefined, { transient: false, reason: WITHHELD });
  }
}

const WITHHELD = 'WritesWithheld';
