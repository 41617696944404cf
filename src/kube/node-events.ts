/**
 * podctl's Events about its Node: referenced by the Node's name and UID, posted in `default` as the
 * kubelet posts its own Node Events, with podctl as their source.
 */
import type { CoreV1Event, V1Node } from '@kubernetes/client-node';
import type { RbacNeed } from './errors.js';
import type { KubeRequest } from './transport.js';

/** The client's one request path (retries, RBAC lines, the write gate). */
type Call = (name: string, need: RbacNeed, request: KubeRequest, signal?: AbortSignal) => Promise<unknown>;

/**
 * The Node's UID, for the Events podctl posts about it: as the Node's controllers reference it
 * (`kubectl describe node` finds Events by the real UID and by the name). Learnt from any read of
 * the Node, else read once when the first Event is posted; a Node that cannot be read is referenced
 * by its name as UID, as the kubelet references its own Node.
 */
export class NodeUid {
  #uid: string | undefined;
  constructor(
    private readonly node: string,
    private readonly call: Call,
  ) {}

  saw(n: V1Node | undefined): void {
    if (n?.metadata?.name === this.node && n.metadata.uid) this.#uid = n.metadata.uid;
  }

  async get(signal?: AbortSignal): Promise<string> {
    if (this.#uid === undefined) {
      const path = `/api/v1/nodes/${encodeURIComponent(this.node)}`;
      const n = (await this.call('get node', { verb: 'get', resource: 'nodes' }, { method: 'GET', path }, signal).catch(() => undefined)) as V1Node | undefined;
      this.saw(n);
    }
    return this.#uid ?? this.node;
  }
}

/** An Event on the node, referencing it by name and UID. */
export function nodeEventOver(node: string, uid: NodeUid, call: Call): (type: 'Normal' | 'Warning', reason: string, message: string, signal?: AbortSignal) => Promise<void> {
  return async (type, reason, message, signal) => {
    const nodeUid = await uid.get(signal);
    const name = `${node}.${Date.now().toString(16)}${Math.floor(Math.random() * 0xffff).toString(16)}`;
    const event = podctlEvent(node, { name, namespace: 'default' }, { apiVersion: 'v1', kind: 'Node', name: node, uid: nodeUid }, type, reason, message);
    await call('post node event', { verb: 'create', resource: 'events', namespace: 'default' }, { method: 'POST', path: '/api/v1/namespaces/default/events', body: event }, signal);
  };
}

/** An Event podctl reports on `node` about `involvedObject`: podctl as its source, first and last seen now. */
export function podctlEvent(node: string, metadata: { name: string; namespace: string }, involvedObject: CoreV1Event['involvedObject'], type: string, reason: string, message: string): CoreV1Event {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata,
    involvedObject,
    type,
    reason,
    message,
    source: { component: 'podctl', host: node },
    reportingComponent: 'podctl',
    reportingInstance: node,
    firstTimestamp: now as unknown as Date,
    lastTimestamp: now as unknown as Date,
    count: 1,
  };
}
