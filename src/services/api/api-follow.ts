/**
 * Following this node's pods in the API server for the life of a long-running command (drain,
 * watch, the agent), as the kubelet's config source does: one list, then a watch with
 * bookmarks, resumed from the last resourceVersion and relisted after 410 Gone (kube/pod-source.ts).
 *
 * With `act` (drain): a pod this node runs that gets a deletionTimestamp becomes a kill with its
 * deletionGracePeriodSeconds (the engine only ever shortens a grace), with a Killing Event; when the
 * command ends, each such pod with nothing left running here gets the kubelet's final delete.
 * Without `act` (watch) the changes are only reported (`onNote`).
 *
 * Invariants: the follower never blocks the command — list/watch errors back off and retry in the
 * background; `stop()` ends it within the watch's abort; a final delete is never issued for a pod
 * that still runs here.
 */
import type { V1Pod } from '../../engine/types.js';
import { podOwnGracePeriod } from '../../engine/grace.js';
import { isBeingDeleted } from '../../kube/desired.js';
import { isMirrorPod } from '../../engine/pod-kinds.js';
import { NodePodSource, type PodSourceEvent } from '../../kube/pod-source.js';
import { EventReason, killingMessage } from '../../kube/status.js';
import { silentReporter, type Reporter } from '../../lib/reporter.js';
import { terminatedOnNode, type ApiNode } from './api-node.js';
import type { NodeSession } from '../../domain/session-api.js';

export interface ApiFollowReport {
  /** Lists made (1 + relists after 410 Gone). */
  lists: number;
  resourceVersion: string;
  /** Pods deleted in the API whose grace this command applied. */
  deletionsHonoured: { uid: string; namespace: string; name: string; gracePeriodSeconds: number }[];
  finallyDeleted: { uid: string; namespace: string; name: string }[];
}

export interface ApiFollowOptions {
  session: NodeSession;
  api: ApiNode;
  act: boolean;
  reporter?: Reporter;
  onNote?: (level: 'info' | 'warn', message: string) => void;
}

export class ApiFollower {
  readonly #options: ApiFollowOptions;
  readonly #source: NodePodSource;
  readonly #stop = new AbortController();
  readonly #honoured = new Map<string, { uid: string; namespace: string; name: string; gracePeriodSeconds: number; pod: V1Pod }>();
  #running: Promise<void> | undefined;
  #chain: Promise<void> = Promise.resolve();

  constructor(options: ApiFollowOptions) {
    this.#options = options;
    this.#source = new NodePodSource(options.api.kube, { onChange: (event) => this.#onChange(event) });
  }

  get source(): NodePodSource {
    return this.#source;
  }

  start(): void {
    this.#running ??= this.#source.run(this.#stop.signal);
  }

  #note(level: 'info' | 'warn', message: string): void {
    this.#options.onNote?.(level, message);
    const reporter = this.#options.reporter ?? silentReporter();
    if (level === 'warn') reporter.warn(message);
    else reporter.debug(message);
  }

  #onChange(event: PodSourceEvent): void {
    switch (event.kind) {
      case 'relist':
        this.#note('info', `API server: relisting this node's pods (${event.reason})`);
        return;
      case 'error':
        this.#note('info', `API server: ${event.message}; retrying in ${event.retryInMs} ms`);
        return;
      case 'listed':
        for (const pod of event.objects) this.#consider(pod);
        return;
      case 'added':
      case 'modified':
        this.#consider(event.object);
        return;
      default:
        return;
    }
  }

  #consider(pod: V1Pod): void {
    if (!isBeingDeleted(pod) || isMirrorPod(pod)) return;
    const uid = pod.metadata?.uid ?? '';
    const grace = podOwnGracePeriod(pod);
    const known = this.#honoured.get(uid);
    if (known && known.gracePeriodSeconds <= grace) return; // a grace only shortens
    const entry = { uid, namespace: pod.metadata?.namespace ?? 'default', name: pod.metadata?.name ?? '', gracePeriodSeconds: grace, pod };
    const ref = `${entry.namespace}/${entry.name}`;
    if (!this.#options.act) {
      this.#honoured.set(uid, entry);
      this.#note('info', `API server: ${ref} deleted (grace ${grace}s)`);
      return;
    }
    this.#chain = this.#chain.then(async () => {
      const local = await this.#options.session.getPod(uid).catch(() => undefined);
      if (!local || terminatedOnNode(local)) {
        this.#honoured.set(uid, entry);
        return;
      }
      await this.#options.api.event(pod, 'Normal', EventReason.Killing, killingMessage(grace)).catch(() => 'failed');
      try {
        // the pod as the API server holds it: its spec orders the stop and names the hooks' ports
        await this.#options.session.requestKill({ uid, gracePeriodSeconds: grace, pod });
        this.#honoured.set(uid, entry);
        this.#note('info', `${ref}: deleted in the API server; terminating with its grace ${grace}s`);
      } catch (error) {
        this.#note('warn', `${ref}: deleted in the API server, but the kill failed: ${(error as Error).message}`);
      }
    });
  }

  /** Stops following; with `act`, sends the final delete of honoured pods that no longer run here. */
  async stop(): Promise<ApiFollowReport> {
    this.#stop.abort();
    await this.#running;
    await this.#chain;
    const report: ApiFollowReport = { lists: this.#source.lists, resourceVersion: this.#source.resourceVersion, deletionsHonoured: [], finallyDeleted: [] };
    for (const entry of this.#honoured.values()) {
      const { pod: _pod, ...name } = entry;
      report.deletionsHonoured.push(name);
      if (!this.#options.act) continue;
      if (!terminatedOnNode(await this.#options.session.getPod(entry.uid).catch(() => undefined))) continue;
      try {
        if ((await this.#options.api.finalDelete(entry)) === 'done') report.finallyDeleted.push({ uid: entry.uid, namespace: entry.namespace, name: entry.name });
      } catch (error) {
        this.#note('warn', `${entry.namespace}/${entry.name}: final delete failed: ${(error as Error).message}`);
      }
    }
    return report;
  }
}
