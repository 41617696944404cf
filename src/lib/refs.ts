/**
 * Which pods a command acts on: pod references (`ns/name`, `name` with `-n`, `--uid`) and pod sets
 * (`-l`, `--all`, `-A`), parsed once from flags and resolved against the node's pod list.
 *
 * Invariants:
 * - Parsing is pure and strict: contradictions (a REF with --all, `ns/name` with a different `-n`)
 *   are UsageErrors that name the flags.
 * - Resolution is pure: the same pod list and selection give the same targets, in node order
 *   (namespace, then name), each pod at most once; explicit refs that match nothing are reported
 *   as missing, never dropped silently.
 */
import type { PodInfo } from '../domain/session-api.js';
import { UsageError } from './errors.js';
import { formatFieldSelector, matchesFields, parseFieldSelector, type FieldRequirement } from './field-selector.js';
import { formatSelector, matchesSelector, parseSelector, type LabelRequirement } from './selector.js';

const DEFAULT_NAMESPACE = 'default';

export type PodRef = { kind: 'name'; namespace: string; name: string } | { kind: 'uid'; uid: string };

export interface PodSelection {
  refs: PodRef[];
  /** `-l`: every pod matching (in the namespace scope). */
  selector?: LabelRequirement[];
  /** `--field-selector`: every pod matching (in the namespace scope, and -l when both are given). */
  fields?: FieldRequirement[];
  /** `--all`: every pod in the namespace scope. */
  all: boolean;
  /** undefined = every namespace (`-A`). */
  namespace: string | undefined;
}

export interface SelectionInput {
  args: string[];
  uids?: string[];
  namespace?: string;
  allNamespaces?: boolean;
  selector?: string;
  fieldSelector?: string;
  all?: boolean;
  /** Read-only commands (status) default to every namespace; destructive ones to `default`. */
  defaultAllNamespaces?: boolean;
  /** Whether an empty selection is allowed (status: yes = everything; kill: no). */
  allowEmpty?: boolean;
}

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

function refToString(ref: PodRef): string {
  return ref.kind === 'uid' ? `uid ${ref.uid}` : `${ref.namespace}/${ref.name}`;
}

/** Parses one REF; `namespace` is the `-n` value (undefined when not given). */
export function parseRef(text: string, namespace: string | undefined): PodRef {
  const ref = text.trim();
  // kubectl's TYPE/NAME: `pod/web-1` (also pods/, po/) is the pod web-1 in -n's namespace; a
  // namespace named "pod" is written with -n
  const typed = /^(pod|pods|po)\/([^/]+)$/.exec(ref);
  if (typed) {
    checkName(typed[2]!, text);
    return { kind: 'name', namespace: namespace ?? DEFAULT_NAMESPACE, name: typed[2]! };
  }
  const parts = ref.split('/');
  if (parts.length > 2 || parts.some((p) => p === '')) {
    throw new UsageError(`REF "${text}" is not ns/name or name`, 'write the pod as ns/name, as name with -n ns, or use --uid');
  }
  if (parts.length === 2) {
    const [ns = '', name = ''] = parts;
    if (namespace !== undefined && namespace !== ns) {
      throw new UsageError(`REF "${text}" names namespace ${ns} but -n is ${namespace}`, 'drop -n or the ns/ prefix');
    }
    checkName(ns, text);
    checkName(name, text);
    return { kind: 'name', namespace: ns, name };
  }
  checkName(ref, text);
  return { kind: 'name', namespace: namespace ?? DEFAULT_NAMESPACE, name: ref };
}

function checkName(part: string, text: string): void {
  if (!NAME.test(part) || part.length > 253) {
    throw new UsageError(`REF "${text}": "${part}" is not a valid Kubernetes name`, 'names are lower-case letters, digits, "-" and "."');
  }
}

export function parseSelection(input: SelectionInput): PodSelection {
  if (input.namespace !== undefined && input.namespace.trim() === '') {
    throw new UsageError('-n/--namespace: empty namespace', 'name one (-n kube-system), or leave -n out for "default"');
  }
  if (input.allNamespaces && input.namespace !== undefined) {
    throw new UsageError('-n/--namespace and -A/--all-namespaces are mutually exclusive', 'pass one of them');
  }
  const refs = input.args.map((a) => parseRef(a, input.namespace));
  if (input.allNamespaces && refs.length > 0) {
    throw new UsageError('-A/--all-namespaces applies to -l, --field-selector and --all, not to pod names', 'name pods as ns/name, or use -l/--field-selector/--all with -A');
  }
  for (const uid of input.uids ?? []) {
    if (!/^[A-Za-z0-9-]{1,64}$/.test(uid)) throw new UsageError(`--uid "${uid}" is not a pod UID`, 'copy the UID from `podctl status -o wide`');
    refs.push({ kind: 'uid', uid });
  }
  const selector = input.selector === undefined ? undefined : parseSelector(input.selector, 'selector');
  const fields = input.fieldSelector === undefined ? undefined : parseFieldSelector(input.fieldSelector);
  const all = input.all ?? false;
  if (all && refs.length > 0) throw new UsageError('--all cannot be combined with REF or --uid', 'drop --all or the pod names');
  if (all && selector) throw new UsageError('--all cannot be combined with -l/--selector', 'drop --all or -l');
  if (all && fields) throw new UsageError('--all cannot be combined with --field-selector', 'drop --all or --field-selector');
  if (refs.length > 0 && selector) throw new UsageError('REF/--uid cannot be combined with -l/--selector', 'use either pod names or a selector');
  if (refs.length > 0 && fields) throw new UsageError('REF/--uid cannot be combined with --field-selector', 'use either pod names or a selector');
  if (!input.allowEmpty && refs.length === 0 && !selector && !fields && !all) {
    throw new UsageError('no pods given', 'name pods as ns/name (or name with -n), or use --uid, -l key=value, --field-selector or --all');
  }
  const everyNamespace = input.allNamespaces === true || (input.namespace === undefined && input.defaultAllNamespaces === true);
  const namespace = everyNamespace ? undefined : (input.namespace ?? DEFAULT_NAMESPACE);
  return { refs, ...(selector ? { selector } : {}), ...(fields ? { fields } : {}), all, namespace };
}

export interface Resolution {
  targets: PodInfo[];
  /** Explicit refs that matched no pod, as written for the operator. */
  missing: string[];
}

/**
 * Code-unit order. For Kubernetes names and UIDs (lowercase letters, digits, '-', '.') it is the order
 * `localeCompare` gives, without building an ICU collator (~8 ms on the first call of a process).
 */
const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Orders pods as every listing shows them: namespace, then name, then UID. */
export function comparePods(a: Pick<PodInfo, 'namespace' | 'name' | 'uid'>, b: Pick<PodInfo, 'namespace' | 'name' | 'uid'>): number {
  return compareText(a.namespace, b.namespace) || compareText(a.name, b.name) || compareText(a.uid, b.uid);
}

/**
 * Resolves a selection against the node's pods. A name matching several pods (a pod recreated with a
 * new UID) resolves to all of them, the live ones first being the operator's usual intent.
 */
/** Shortest UID prefix `--uid` accepts (status prints the first 8 characters). */
const MIN_UID_PREFIX = 4;

/**
 * The pod with this UID, or — as crictl accepts ID prefixes — the one pod whose UID starts with it
 * (at least MIN_UID_PREFIX characters); a prefix that fits several pods is a usage error listing them.
 */
function podsByUid(pods: PodInfo[], uid: string): PodInfo[] {
  const exact = pods.filter((p) => p.uid === uid);
  if (exact.length > 0 || uid.length < MIN_UID_PREFIX) return exact;
  const prefixed = pods.filter((p) => p.uid.startsWith(uid));
  if (prefixed.length > 1) {
    const list = prefixed
      .slice(0, 5)
      .map((p) => `${p.namespace}/${p.name} (${p.uid})`)
      .join(', ');
    throw new UsageError(`--uid ${uid} is the start of ${prefixed.length} pods' UIDs: ${list}${prefixed.length > 5 ? ', …' : ''}`, 'give more characters of the UID');
  }
  return prefixed;
}

export function resolveSelection(pods: PodInfo[], selection: PodSelection): Resolution {
  const chosen = new Map<string, PodInfo>();
  const missing: string[] = [];
  const inScope = (p: PodInfo): boolean => selection.namespace === undefined || p.namespace === selection.namespace;
  if (selection.refs.length > 0) {
    for (const ref of selection.refs) {
      const hits = ref.kind === 'uid' ? podsByUid(pods, ref.uid) : pods.filter((p) => p.namespace === ref.namespace && p.name === ref.name);
      if (hits.length === 0) missing.push(refToString(ref));
      for (const p of hits) chosen.set(p.uid, p);
    }
  } else if (selection.selector || selection.fields) {
    const { selector = [], fields = [] } = selection;
    for (const p of pods) if (inScope(p) && matchesSelector(p.pod?.metadata?.labels, selector) && matchesFields(p, fields)) chosen.set(p.uid, p);
  } else {
    for (const p of pods) if (inScope(p)) chosen.set(p.uid, p);
  }
  return { targets: [...chosen.values()].sort(comparePods), missing };
}

/** How the selection reads in messages: "default/web-1, uid 1234", "-l app=web in ns prod", … */
export function describeSelection(selection: PodSelection): string {
  const scope = selection.namespace === undefined ? 'in every namespace' : `in namespace ${selection.namespace}`;
  if (selection.refs.length > 0) return selection.refs.map(refToString).join(', ');
  const sets = [...(selection.selector ? [`-l ${formatSelector(selection.selector)}`] : []), ...(selection.fields ? [`--field-selector ${formatFieldSelector(selection.fields)}`] : [])];
  if (sets.length > 0) return `${sets.join(' ')} ${scope}`;
  return `all pods ${scope}`;
}

/** The pod-selection flags as oclif parses them (see `selectionFlags` in flags.ts). */
export interface SelectionFlagValues {
  uid?: string[];
  namespace?: string;
  'all-namespaces'?: boolean;
  selector?: string;
  'field-selector'?: string;
  all?: boolean;
}

/** A command's REF arguments and selection flags, parsed into one selection. */
export function selectionFromFlags(argv: unknown[], flags: SelectionFlagValues, options: Pick<SelectionInput, 'defaultAllNamespaces' | 'allowEmpty'> = {}): PodSelection {
  return parseSelection({
    args: argv as string[],
    uids: flags.uid,
    namespace: flags.namespace,
    allNamespaces: flags['all-namespaces'],
    selector: flags.selector,
    fieldSelector: flags['field-selector'],
    all: flags.all,
    ...options,
  });
}
