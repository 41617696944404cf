/**
 * preStop hooks for the runtime syncer: a container's hook (from the pod spec, else from the
 * kubelet's annotation on the container) run as the kubelet runs it before StopContainer: exec via
 * ExecSync, httpGet to the pod IP or the node, or sleep.
 *
 * Invariants:
 * - A hook runs at most once per container (by container ID), however often the pod's termination
 *   is re-run; `forget` is called only once the container is removed.
 * - A hook is bounded by the grace deadline it is given; with no grace left it does not run.
 * - A hook's failure is reported, never thrown: every hook that was due ends in the hook journal
 *   (succeeded, failed, or not-run when it could not be run at all) and through `onHook`.
 * - Only an abort is thrown (with the signal's reason), so an aborted attempt stops at once.
 */
import type { V1HTTPGetAction, V1LifecycleHandler, V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../../engine/types.js';
import { abortReason, sleep } from '../../lib/abortable.js';
import type { CriClient, Container } from '../client/client.js';
import { hookLine, type HookJournal, type HookOutcomeKind, type HookType } from './hook-journal.js';
import { HookNotRunnable, hookUrl, NODE_ADDRESS, resolveHookPort, runHttpGet } from './http-hook.js';
import { ANN_PRESTOP, LABEL_POD_NAME, LABEL_POD_NAMESPACE } from '../client/kubelet-labels.js';
import { parsePreStop } from '../cache/pods.js';

/** `namespace/name` of the pod a hook runs in: its spec's, else the kubelet's labels on the container, else its UID. */
function podRefOf(uid: string, c: Container, pod: V1Pod | undefined): string {
  const namespace = pod?.metadata?.namespace ?? c.labels?.[LABEL_POD_NAMESPACE];
  const name = pod?.metadata?.name ?? c.labels?.[LABEL_POD_NAME];
  return namespace && name ? `${namespace}/${name}` : uid;
}

/** One hook's end: its container, type, outcome, and when it began and ended (epoch ms). */
export interface HookEvent {
  uid: string;
  container: string;
  ok: boolean;
  message: string;
  type: HookType;
  outcome: HookOutcomeKind;
  startedAt: number;
  endedAt: number;
}

export type SyncerLog = (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;

export interface PreStopHooksOptions {
  client: CriClient;
  clock: Clock;
  log: SyncerLog;
  /** Called for each preStop hook outcome (events/timeline). */
  onHook: ((event: HookEvent) => void) | undefined;
  /** Where hook outcomes are recorded for the commands' results. */
  hookJournal: HookJournal;
}

export class PreStopHooks {
  #client: CriClient;
  #clock: Clock;
  #log: SyncerLog;
  #onHook: PreStopHooksOptions['onHook'];
  #hookJournal: HookJournal;
  /** Containers whose preStop hook has started: it never runs twice. */
  #hooksStarted = new Set<string>();

  constructor(options: PreStopHooksOptions) {
    this.#client = options.client;
    this.#clock = options.clock;
    this.#log = options.log;
    this.#onHook = options.onHook;
    this.#hookJournal = options.hookJournal;
  }

  /**
   * Runs the container's preStop hook when it has one, the grace is above 0 and the hook has not
   * started before; resolves true when it ran it (whatever its outcome).
   */
  async runOnce(signal: AbortSignal, uid: string, c: Container, name: string, deadline: number, grace: number, pod: V1Pod | undefined): Promise<boolean> {
    const hook = this.#preStopOf(pod, name, c);
    if (!hook || !(grace > 0) || this.#hooksStarted.has(c.id)) return false;
    this.#hooksStarted.add(c.id);
    await this.#runPreStop(signal, uid, c, name, hook, deadline, pod);
    return true;
  }

  /** Forgets a removed container (its ID is never seen again). */
  forget(containerId: string): void {
    this.#hooksStarted.delete(containerId);
  }

  #preStopOf(pod: V1Pod | undefined, name: string, c: Container): V1LifecycleHandler | undefined {
    const fromSpec = [...(pod?.spec?.containers ?? []), ...(pod?.spec?.initContainers ?? [])].find((x) => x.name === name)?.lifecycle?.preStop;
    return fromSpec ?? parsePreStop(c.annotations?.[ANN_PRESTOP]);
  }

  /**
   * Runs a preStop hook bounded by the grace deadline; failures are reported, not fatal. Every hook
   * ends in the hook journal: succeeded, failed, or not-run (it could not be run at all).
   */
  async #runPreStop(signal: AbortSignal, uid: string, c: Container, name: string, hook: V1LifecycleHandler, deadline: number, pod: V1Pod | undefined): Promise<void> {
    const started = this.#clock.now();
    const remainingMs = deadline - started;
    const type: HookType = hook.exec?.command?.length ? 'exec' : hook.sleep ? 'sleep' : hook.httpGet ? 'httpGet' : 'unknown';
    const report = (outcome: HookOutcomeKind, message: string): void => {
      const ok = outcome === 'succeeded';
      this.#log(ok ? 'debug' : 'warn', hookLine(type, podRefOf(uid, c, pod), name, outcome, message));
      const endedAt = this.#clock.now();
      this.#onHook?.({ uid, container: name, ok, message, type, outcome, startedAt: started, endedAt });
      this.#hookJournal.record({ uid, container: name, type, outcome, ms: Math.max(0, endedAt - started), message });
    };
    if (remainingMs <= 0) return report('not-run', 'no grace left to run it');
    try {
      if (type === 'exec') {
        const seconds = Math.max(1, Math.ceil(remainingMs / 1000));
        const res = await this.#client.execSync(c.id, hook.exec?.command ?? [], seconds, { signal });
        report(res.exitCode === 0 ? 'succeeded' : 'failed', `exec exited ${res.exitCode}${res.stderr ? `: ${res.stderr.trim()}` : ''}`);
      } else if (type === 'sleep') {
        const ms = Math.min(Math.max(0, Number(hook.sleep?.seconds) * 1000), remainingMs);
        await sleep(ms, signal);
        report('succeeded', `slept ${Math.round(ms / 100) / 10}s`);
      } else if (type === 'httpGet' && hook.httpGet) {
        await this.#runHttpGet(signal, c, name, hook.httpGet, deadline, pod, report);
      } else {
        report('not-run', 'the preStop handler has no exec, httpGet or sleep action; skipped');
      }
    } catch (err) {
      if (signal.aborted) throw abortReason(signal);
      report(err instanceof HookNotRunnable ? 'not-run' : 'failed', err instanceof Error ? err.message : String(err));
    }
  }

  /** An httpGet hook: host from the handler, else the node (host network) or the pod IP from the sandbox status. */
  async #runHttpGet(
    signal: AbortSignal,
    c: Container,
    name: string,
    action: V1HTTPGetAction,
    deadline: number,
    pod: V1Pod | undefined,
    report: (outcome: HookOutcomeKind, message: string) => void,
  ): Promise<void> {
    let host = action.host ?? '';
    if (host === '') {
      if (pod?.spec?.hostNetwork === true) host = NODE_ADDRESS;
      else {
        if (!c.podSandboxId) throw new HookNotRunnable("the container's sandbox is unknown, so the pod IP is unknown");
        const status = (await this.#client.podSandboxStatus(c.podSandboxId, { signal })).status;
        if (!status) throw new HookNotRunnable('the sandbox status is empty, so the pod IP is unknown');
        // a sandbox in the node's network namespace has no IP of its own (the kubelet uses the node's)
        host = status.network?.ip || NODE_ADDRESS;
      }
    }
    const spec = [...(pod?.spec?.containers ?? []), ...(pod?.spec?.initContainers ?? [])].find((x) => x.name === name);
    const port = resolveHookPort(action.port, spec?.ports ?? []);
    const url = hookUrl(action, host, port);
    const res = await runHttpGet(url, action.httpHeaders, deadline - this.#clock.now(), signal);
    const ok = res.status >= 200 && res.status < 400;
    report(ok ? 'succeeded' : 'failed', `GET ${url.href} answered ${res.status}${ok || !res.body ? '' : `: ${res.body.trim().slice(0, 200)}`}`);
  }
}
