/**
 * Flags shared by podctl commands: the globals every command takes, and the pod-selection and
 * waiting flags of the commands that act on pods.
 *
 * Invariants: every flag has a summary (shown by --help); names and short characters are frozen in
 * `docs/cli-contract.json` (checked by test/commands/contract.test.ts).
 */
import { hostname } from 'node:os';
import path from 'node:path';
import { Flags } from '@oclif/core';
import { parseDuration, parseSeconds } from '../lib/duration.js';
import { UsageError } from '../lib/errors.js';

export const DEFAULT_STATE_DIR = '/var/lib/podctl';
const REQUEST_TIMEOUT_ENV = 'PODCTL_REQUEST_TIMEOUT';

/**
 * `--request-timeout` (kubectl's name), also `--timeout` (crictl's) on the commands that have no
 * `--timeout` of their own (kill, evict and drain: there it bounds the wait for termination).
 * The value is milliseconds; 0 means "not set" (the default), as crictl's 0.
 */
function requestTimeoutFlag(aliases: string[]) {
  return Flags.custom<number>({
    summary: `Deadline of each request to the container runtime: 30s, 2m, 500ms or a number of seconds${aliases.includes('timeout') ? ' (also --timeout, as in crictl)' : ''}.`,
    description:
      "Default: $PODCTL_REQUEST_TIMEOUT, else timeout in /etc/crictl.yaml (crictl's file, whole seconds; $CRI_CONFIG_FILE names another), else 10s; 0 means that default. When none of these sets it, StopPodSandbox and RemovePodSandbox get 2m (the kubelet's --runtime-request-timeout): a loaded runtime's sandbox teardown can take over a minute. Connecting is bounded by 2s (or this, when shorter): a socket that does not answer as a CRI runtime by then is an error naming it.",
    env: REQUEST_TIMEOUT_ENV,
    helpGroup: 'GLOBAL',
    helpValue: 'DURATION',
    ...(aliases.length > 0 ? { aliases } : {}),
    parse: async (value) => parseDuration(value, 'request-timeout'),
  })();
}

const runtimeEndpointFlag = Flags.string({
  char: 'r',
  summary: 'CRI socket of the container runtime (unix:///path or a path); -r as in crictl.',
  description:
    "Default: $CONTAINER_RUNTIME_ENDPOINT, else runtime-endpoint in /etc/crictl.yaml (crictl's file; $CRI_CONFIG_FILE names another), else the first of the containerd, CRI-O and cri-dockerd default sockets that exists.",
  env: 'CONTAINER_RUNTIME_ENDPOINT',
  helpGroup: 'GLOBAL',
  helpValue: 'unix:///run/containerd/containerd.sock',
});

export const globalFlags = {
  'runtime-endpoint': runtimeEndpointFlag,
  'request-timeout': requestTimeoutFlag(['timeout']),
  'state-dir': Flags.string({
    summary: "Directory of podctl's checkpoint store.",
    description: 'Shared by every podctl process on the node; created 0700. A relative path is resolved against the current directory and the result is said on stderr; an empty one is refused.',
    env: 'PODCTL_STATE_DIR',
    default: DEFAULT_STATE_DIR,
    parse: async (value) => {
      if (value.trim() === '') throw new UsageError('--state-dir is empty', `give a directory, or leave it out for ${DEFAULT_STATE_DIR}`);
      if (value.includes('\0')) throw new UsageError('--state-dir contains a NUL byte');
      return path.resolve(value);
    },
    helpGroup: 'GLOBAL',
    helpValue: 'DIR',
  }),
  kubeconfig: Flags.string({
    summary: 'Kubeconfig of an API server to read desired pods from and report evictions to.',
    description: 'Also $KUBECONFIG, or the in-cluster service account. Without one podctl works from the runtime alone.',
    env: 'KUBECONFIG',
    helpGroup: 'GLOBAL',
    helpValue: 'FILE',
  }),
  node: Flags.string({
    summary: 'Name of this node in the API server.',
    description: 'Default: $NODE_NAME, else the host name (as the kubelet does).',
    env: 'NODE_NAME',
    helpGroup: 'GLOBAL',
    helpValue: 'NAME',
  }),
  'log-level': Flags.option({
    summary: 'Least severe log lines shown on stderr; debug adds stack traces to errors.',
    options: ['debug', 'info', 'warn', 'error'] as const,
    env: 'PODCTL_LOG_LEVEL',
    default: 'info' as const,
    helpGroup: 'GLOBAL',
  })(),
  'no-color': Flags.boolean({
    summary: 'Plain output without colours (also NO_COLOR).',
    default: false,
    helpGroup: 'GLOBAL',
  }),
};

/**
 * The global flags of a command with a `--timeout` of its own (kill, evict, drain: the wait for
 * termination): the request deadline is `--request-timeout` only there.
 */
export const globalFlagsOwnTimeout = { ...globalFlags, 'request-timeout': requestTimeoutFlag([]) };

/** Flags naming which pods a command acts on (together with its REF arguments). */
export const selectionFlags = {
  namespace: Flags.string({
    char: 'n',
    summary: 'Namespace of the pods named by REF, -l or --all (default "default").',
  }),
  'all-namespaces': Flags.boolean({
    char: 'A',
    summary: 'With -l, --field-selector or --all: pods in every namespace.',
    default: false,
  }),
  uid: Flags.string({
    summary: 'Pod UID or a unique prefix of it (repeatable; the 8 characters status prints will do); for pods whose name is ambiguous or unknown.',
    multiple: true,
  }),
  selector: Flags.string({
    char: 'l',
    summary: 'Label selector: key=value, key!=value, key in (a,b), key notin (a,b), key, !key; comma-separated.',
  }),
  'field-selector': Flags.string({
    summary: 'Field selector: metadata.name, metadata.namespace, metadata.uid, status.phase or state, with =, == or !=; comma-separated.',
    description:
      "status.phase is the Kubernetes phase as the runtime shows it (Pending, Running, Succeeded, Failed, Unknown); state is podctl's (sync, terminating, terminated, finished, runtime). Combines with -l (both must hold).",
    helpValue: 'SELECTOR',
  }),
  all: Flags.boolean({
    summary: 'Every pod in the namespace (every pod on the node with -A).',
    default: false,
  }),
};

/**
 * A grace or budget flag: a number of seconds or a duration string (`5`, `5s`, `1m30s`), whole
 * seconds, at most a year (lib/duration.ts `parseSeconds`): every such flag of podctl takes both.
 */
export function secondsFlag(options: { summary: string; flag: string }) {
  return Flags.custom<number>({ summary: options.summary, helpValue: 'SECONDS|DURATION', parse: async (value) => parseSeconds(value, options.flag) })();
}

/** Flags of commands that terminate pods and wait for them. */
export const terminationFlags = {
  grace: secondsFlag({
    summary: "Grace period: seconds or a duration (5, 5s, 1m30s); only ever shortens a pod's grace (minimum 1, maximum 31536000s: a year).",
    flag: 'grace',
  }),
  timeout: Flags.string({
    summary: "How long to wait for termination (default: the kubelet's bound, max(10s, 1.5×grace)).",
    description: 'A duration: 30s, 2m, 1m30s or a number of seconds. When it passes podctl exits 3; termination continues.',
    helpValue: 'DURATION',
  }),
  'no-wait': Flags.boolean({
    summary: 'Request the termination and return; a background podctl process drives it to the end.',
    default: false,
  }),
};

/** What the termination flags ask of a kill or evict (the services' options, not the flags). */
export interface TerminationOptions {
  gracePeriodSeconds?: number;
  timeoutMs?: number;
  wait: boolean;
}

/**
 * A command's `--timeout` (kill, evict, drain: the bound of the wait for termination), in ms: a
 * duration, never 0 (a wait of no time stops nothing; the same refusal on every command).
 */
export function parseWaitBound(text: string): number {
  const ms = parseDuration(text, 'timeout');
  if (ms === 0) throw new UsageError(`--timeout: "${text}" leaves no time to wait for termination`, 'give a bound such as 2m, or leave --timeout out for the default');
  return ms;
}

/** Validates and converts the termination flags; `--timeout` with `--no-wait` is a usage error. */
export function terminationOptionsFromFlags(flags: { grace?: number; timeout?: string; 'no-wait': boolean }): TerminationOptions {
  if (flags['no-wait'] && flags.timeout !== undefined) throw new UsageError('--timeout has no effect with --no-wait', 'drop one of them');
  return {
    ...(flags.grace !== undefined ? { gracePeriodSeconds: flags.grace } : {}),
    ...(flags.timeout !== undefined ? { timeoutMs: parseWaitBound(flags.timeout) } : {}),
    wait: !flags['no-wait'],
  };
}

export type GlobalFlags = {
  'runtime-endpoint'?: string | undefined;
  /** ms; undefined or 0: not set on the command line or in the environment. */
  'request-timeout'?: number | undefined;
  'state-dir': string;
  kubeconfig?: string | undefined;
  node?: string | undefined;
  'log-level': 'debug' | 'info' | 'warn' | 'error';
  'no-color': boolean;
};

/** This node's name: --node / $NODE_NAME, else the host name in lower case (the kubelet's default). */
export function nodeName(flag: string | undefined): string {
  return flag ?? hostname().toLowerCase();
}

/** What `lastOfEachFlag` needs of a flag definition (oclif's). */
interface FlagShape {
  type: 'boolean' | 'option';
  char?: string;
  aliases?: string[];
  multiple?: boolean;
  allowNo?: boolean;
}

/**
 * The command line with every flag that is not repeatable given once, the last time it was given
 * (`--state-dir a --state-dir b` is `--state-dir b`), as most CLIs take it; oclif refuses a second
 * one. Repeatable flags, arguments and everything after `--` are left as they are.
 */
export function lastOfEachFlag(argv: readonly string[], flags: Readonly<Record<string, FlagShape>>): string[] {
  const byName = new Map<string, { key: string; def: FlagShape }>();
  for (const [key, def] of Object.entries(flags)) {
    byName.set(`--${key}`, { key, def });
    if (def.allowNo) byName.set(`--no-${key}`, { key, def });
    for (const alias of def.aliases ?? []) byName.set(`--${alias}`, { key, def });
    if (def.char) byName.set(`-${def.char}`, { key, def });
  }
  const spans = new Map<string, [number, number][]>();
  for (let i = 0; i < argv.length; i += 1) {
    const token = argv[i]!;
    if (token === '--') break;
    const long = token.startsWith('--');
    const name = long ? token.split('=')[0]! : token.slice(0, 2);
    const found = token.startsWith('-') ? byName.get(name) : undefined;
    if (!found || found.def.multiple) continue;
    // the value is the next token unless it is joined (--flag=value, -xvalue)
    const joined = long ? token.includes('=') : token.length > 2;
    const length = found.def.type === 'option' && !joined && i + 1 < argv.length ? 2 : 1;
    spans.set(found.key, [...(spans.get(found.key) ?? []), [i, length]]);
    i += length - 1;
  }
  const dropped = new Set<number>();
  for (const list of spans.values()) for (const [start, length] of list.slice(0, -1)) for (let k = 0; k < length; k += 1) dropped.add(start + k);
  return dropped.size === 0 ? [...argv] : argv.filter((_, i) => !dropped.has(i));
}
