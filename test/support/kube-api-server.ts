/**
 * A local Kubernetes API server for tests: no kube-apiserver can be installed on these machines, so
 * podctl's API tests run against this real HTTP server, which follows the REST conventions of the
 * endpoints podctl uses (and only those):
 *
 * - pods: list (all namespaces or one; fieldSelector spec.nodeName / metadata.name /
 *   metadata.namespace), create, GET, DELETE with DeleteOptions (gracePeriodSeconds,
 *   preconditions.uid / resourceVersion → 409 Conflict), graceful deletion (grace > 0 on a pod
 *   bound to a node sets deletionTimestamp = now + grace and deletionGracePeriodSeconds, which only
 *   shrink; grace 0 removes the object unless finalizers hold it), pods/status PATCH
 *   (merge-patch, strategic-merge-patch with conditions merged by type, json-patch refused 415),
 *   pods/eviction create (PodDisruptionBudget with no disruptions left → 429 TooManyRequests with
 *   a DisruptionBudget cause and Retry-After);
 * - watch streams (`?watch=1&resourceVersion=…&allowWatchBookmarks=true`): ADDED / MODIFIED /
 *   DELETED / BOOKMARK lines; a resourceVersion older than the compacted history gets an ERROR event
 *   with a 410 Expired Status, as the real server answers;
 * - events create/list, nodes GET/PATCH (cordon), Leases in kube-node-lease (GET), Leases in any
 *   other namespace (GET, POST with 409 AlreadyExists, PUT at the resourceVersion read, else 409
 *   Conflict: the drain lock);
 * - every object and list carries metadata.resourceVersion from one global counter; every error is
 *   a `Status` object (kind Status, status Failure, message, reason, details, code);
 * - bearer-token authentication (401) and per-verb/resource denials (403, worded as RBAC does);
 * - users (`addAgent`): podctl's ServiceAccount, authorized by the RBAC shipped in deploy/ (rbac.ts)
 *   and answered 403 as RBAC words it for anything that RBAC does not grant; its pod list and watch
 *   must name its node (fieldSelector spec.nodeName), as the agent's always do;
 * - nodes: list and watch with fieldSelector metadata.name (MODIFIED on every PATCH, as for pods);
 * - SelfSubjectReview (authentication.k8s.io/v1: the user, groups and extra of the token); the
 *   ValidatingAdmissionPolicy and binding of deploy/ (`installNodeRestriction`, GET by name, and
 *   discovery of admissionregistration.k8s.io/v1 unless `servesAdmissionV1` is false, as before 1.30);
 * - fault injection: N answers with a status (429 with Retry-After, 5xx) or a dropped connection,
 *   matched by method, path and watch or not; `stop()`/`start()` on the same port for an
 *   unreachable server; `stall` for one that accepts connections and never answers; `silence()`
 *   for open watches that go quiet (half-open: no event, no bookmark, the connection kept).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { AddressInfo, Socket } from 'node:net';
import { PODCTL_SERVICE_ACCOUNT, PODCTL_USERNAME, attributesOf, authorize, forbiddenMessage, loadShippedRbac, type ScopedRule } from './rbac.js';

type Obj = Record<string, any>;

export interface Fault {
  /** Which requests: method (e.g. 'DELETE') and a path test. Default: every request. */
  method?: string;
  path?: RegExp;
  /** Answer with this HTTP status (429 gets reason TooManyRequests), or drop the connection. */
  status?: number;
  drop?: boolean;
  /** Retry-After header (seconds), for 429/503. */
  retryAfter?: number;
  /** How many matching requests get the fault (default 1). */
  count?: number;
  /** Only watch requests (true) or only the others (false). Default: both. */
  watch?: boolean;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  contentType: string | undefined;
  body: any;
  status: number;
  /** Who asked (the user's name; 'admin' for the all-powerful `token`). */
  user: string;
  /** Refused because RBAC does not grant it (not a planted `forbidden` denial). */
  refusedByRbac?: true;
  /** When it arrived (ms since the epoch). */
  at: number;
}

/** A user of the server other than the all-powerful `token`: authorized by RBAC rules. */
export interface ApiUser {
  username: string;
  uid: string;
  groups: string[];
  extra: Record<string, string[]>;
  rules: ScopedRule[];
  /** Its pod lists and watches must carry fieldSelector spec.nodeName=<this> (403 otherwise). */
  podsOfNode?: string;
}

export interface AgentIdentity {
  /** The node the agent runs on (its pod lists must name it). */
  node: string;
  /** The bearer token (default `agent-<node>`). */
  token?: string;
  /** The token's node-name claim: the node (default), another node's name, or none (false). */
  nodeClaim?: boolean | string;
}

const NODE_CLAIM = 'authentication.kubernetes.io/node-name';
const ADMIN = 'admin';

/** Requests that change something (a SelfSubjectReview is a question, not a write). */
function isWrite(request: RecordedRequest): boolean {
  return request.method !== 'GET' && request.method !== 'HEAD' && !request.path.endsWith('/selfsubjectreviews');
}

interface WatchEntry {
  rv: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: Obj;
}

interface Watcher {
  res: http.ServerResponse;
  filter: (pod: Obj) => boolean;
  bookmarks: boolean;
  /** Which objects it follows ('Pod' or 'Node'). */
  kind: string;
  /** Gone quiet: nothing more is written to it (`silence()`). */
  silent: boolean;
}

const clone = <T>(v: T): T => structuredClone(v);

function status(code: number, reason: string, message: string, details?: Obj): Obj {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code };
}

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: any, patch: any): any {
  if (!isObject(patch)) return clone(patch);
  const out: Obj = isObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** Strategic merge patch for the fields podctl patches: lists of conditions/taints merge by key. */
export function strategicMergePatch(target: any, patch: any, path = ''): any {
  if (!isObject(patch)) return clone(patch);
  const out: Obj = isObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    const here = `${path}.${k}`;
    if (v === null) delete out[k];
    else if (Array.isArray(v) && (here === '.status.conditions' || here === '.spec.taints')) {
      const key = here === '.spec.taints' ? 'key' : 'type';
      const merged: Obj[] = Array.isArray(out[k]) ? clone(out[k]) : [];
      for (const item of v as Obj[]) {
        const i = merged.findIndex((m) => m[key] === item[key]);
        if (i >= 0) merged[i] = strategicMergePatch(merged[i], item, `${here}[]`);
        else merged.push(clone(item));
      }
      out[k] = merged;
    } else out[k] = strategicMergePatch(out[k], v, here);
  }
  return out;
}

function fieldFilter(selector: string | null): (o: Obj) => boolean {
  if (!selector) return () => true;
  const terms = selector.split(',').map((t) => {
    const neg = t.includes('!=');
    const [key, value] = t.split(neg ? '!=' : /==?/) as [string, string];
    return { key, value, neg };
  });
  const read = (o: Obj, key: string): string => {
    let v: any = o;
    for (const part of key.split('.')) v = v?.[part];
    return v === undefined || v === null ? '' : String(v);
  };
  return (o) => terms.every((t) => (read(o, t.key) === t.value) !== t.neg);
}

function labelsMatch(selector: Obj | undefined, labels: Obj | undefined): boolean {
  const match = selector?.matchLabels ?? {};
  return Object.entries(match).every(([k, v]) => labels?.[k] === v);
}

export class KubeApiServer {
  readonly pods = new Map<string, Obj>();
  readonly events = new Map<string, Obj>();
  readonly nodes = new Map<string, Obj>();
  readonly leases = new Map<string, Obj>();
  /** Leases in other namespaces than kube-node-lease (the drain lock), by "namespace/name". */
  readonly namespacedLeases = new Map<string, Obj>();
  readonly pdbs = new Map<string, Obj>();
  readonly requests: RecordedRequest[] = [];
  /** Accepted bearer token (401 otherwise); '' accepts anonymous requests. */
  token = 'abc';
  /** ValidatingAdmissionPolicies and their bindings, by "resource/name" (`installNodeRestriction`). */
  readonly admission = new Map<string, Obj>();
  /** Serves admissionregistration.k8s.io/v1 ValidatingAdmissionPolicies (Kubernetes ≥ 1.30); false: 404 as older servers. */
  servesAdmissionV1 = true;
  /** Users by bearer token, besides `token` (`addAgent`). */
  readonly users = new Map<string, ApiUser>();
  /** Denied "verb resource" pairs, e.g. "delete pods", "patch pods/status" (403). */
  readonly forbidden = new Set<string>();
  /** Called after each answer (a test seam: change state between a client's read and its write). */
  onAnswered: ((request: RecordedRequest) => void) | undefined;
  /** Bookmark every N ms on open watches (0: only on `bookmark()`). */
  bookmarkEveryMs = 0;
  /** Accept connections and read requests, but never answer (recorded with status 0). */
  stall = false;

  #rv = 1000;
  #history: WatchEntry[] = [];
  /** Watch history before this RV is gone (410 Expired for older resourceVersions). */
  #compactedBelow = 0;
  #faults: (Fault & { left: number })[] = [];
  #watchers = new Set<Watcher>();
  #server: http.Server | undefined;
  #sockets = new Set<Socket>();
  #port = 0;
  #bookmarkTimer: NodeJS.Timeout | undefined;
  #stalled = new Set<http.ServerResponse>();

  get port(): number {
    return this.#port;
  }

  get resourceVersion(): string {
    return String(this.#rv);
  }

  async start(port = this.#port): Promise<this> {
    const server = http.createServer((req, res) => this.#handle(req, res));
    server.on('connection', (s) => {
      this.#sockets.add(s);
      s.on('close', () => this.#sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.#server = server;
    this.#port = (server.address() as AddressInfo).port;
    this.#bookmarkTimer = setInterval(() => {
      if (this.bookmarkEveryMs > 0) this.bookmark();
    }, 100);
    this.#bookmarkTimer.unref();
    return this;
  }

  /** Closes the port and every connection (watches end): the API server is unreachable. */
  async stop(): Promise<void> {
    clearInterval(this.#bookmarkTimer);
    for (const res of this.#stalled) res.destroy();
    this.#stalled.clear();
    for (const w of this.#watchers) w.res.destroy();
    this.#watchers.clear();
    for (const s of this.#sockets) s.destroy();
    const server = this.#server;
    this.#server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /**
   * podctl's ServiceAccount as the DaemonSet's agent on `node`, authorized by exactly the RBAC in
   * deploy/; returns its bearer token (for `writeKubeconfig`).
   */
  addAgent(identity: AgentIdentity): string {
    const token = identity.token ?? `agent-${identity.node}`;
    const claim = identity.nodeClaim === undefined || identity.nodeClaim === true ? identity.node : identity.nodeClaim;
    this.users.set(token, {
      username: PODCTL_USERNAME,
      uid: randomUUID(),
      groups: ['system:serviceaccounts', `system:serviceaccounts:${PODCTL_SERVICE_ACCOUNT.namespace}`, 'system:authenticated'],
      extra: claim === false ? {} : { [NODE_CLAIM]: [claim], 'authentication.kubernetes.io/pod-name': [`podctl-agent-${identity.node}`] },
      rules: loadShippedRbac(),
      podsOfNode: identity.node,
    });
    return token;
  }

  /** Stores the ValidatingAdmissionPolicy and its binding from deploy/validating-admission-policy.yaml (as `kubectl apply` would). */
  installNodeRestriction(change?: (objects: { policy: Obj; binding: Obj }) => void): void {
    const docs = parseAllDocuments(readFileSync(path.join(process.cwd(), 'deploy', 'validating-admission-policy.yaml'), 'utf8')).map((d) => d.toJSON() as Obj);
    const policy = docs.find((o) => o.kind === 'ValidatingAdmissionPolicy')!;
    const binding = docs.find((o) => o.kind === 'ValidatingAdmissionPolicyBinding')!;
    change?.({ policy, binding });
    for (const [resource, o] of [
      ['validatingadmissionpolicies', policy],
      ['validatingadmissionpolicybindings', binding],
    ] as const) {
      o.metadata = { ...o.metadata, uid: randomUUID(), resourceVersion: this.#nextRv(), generation: 1 };
      this.admission.set(`${resource}/${o.metadata.name}`, o);
    }
  }

  /** The requests of a user (by name) that RBAC refused (403). */
  denied(user = PODCTL_USERNAME): RecordedRequest[] {
    return this.requests.filter((r) => r.user === user && r.refusedByRbac === true);
  }

  /** The write requests (anything but a read or a SelfSubjectReview) a user (by name) made. */
  writes(user = PODCTL_USERNAME): RecordedRequest[] {
    return this.requests.filter((r) => r.user === user && isWrite(r));
  }

  inject(fault: Fault): void {
    this.#faults.push({ ...fault, left: fault.count ?? 1 });
  }

  /** Forgets watch history up to now: a watch from an older resourceVersion gets 410 Gone. */
  compact(): void {
    this.#compactedBelow = this.#rv + 1;
    this.#history = [];
  }

  /** Sends a BOOKMARK with the current resourceVersion on every watch that asked for bookmarks. */
  bookmark(): void {
    for (const w of this.#watchers) {
      if (w.bookmarks && !w.silent) w.res.write(`${JSON.stringify({ type: 'BOOKMARK', object: { kind: w.kind, apiVersion: 'v1', metadata: { resourceVersion: String(this.#rv) } } })}\n`);
    }
  }

  /** Every open watch goes quiet, its connection kept open (a half-open connection, as seen by the client). */
  silence(): void {
    for (const w of this.#watchers) w.silent = true;
  }

  /** How many watches are open now (silent ones included). */
  get openWatches(): number {
    return this.#watchers.size;
  }

  /** Answers to stalled requests, once the stall ends: they are cut (the client times out first). */
  unstall(): void {
    this.stall = false;
    for (const res of this.#stalled) res.destroy();
    this.#stalled.clear();
  }

  /** Ends every open watch (the server closed them, as it does on its own timeout). */
  closeWatches(): void {
    for (const w of this.#watchers) w.res.end();
    this.#watchers.clear();
  }

  #nextRv(): string {
    this.#rv += 1;
    return String(this.#rv);
  }

  #emit(type: WatchEntry['type'], object: Obj): void {
    const entry: WatchEntry = { rv: Number(object.metadata.resourceVersion), type, object: clone(object) };
    this.#history.push(entry);
    for (const w of this.#watchers) if (w.kind === (object.kind ?? 'Pod') && !w.silent && w.filter(object)) w.res.write(`${JSON.stringify({ type, object: entry.object })}\n`);
  }

  // ---- direct state access for tests (each change bumps the RV and feeds watches) ----

  addPod(pod: Obj): Obj {
    const p = clone(pod);
    p.apiVersion = 'v1';
    p.kind = 'Pod';
    p.metadata = { ...p.metadata, uid: p.metadata?.uid ?? randomUUID(), namespace: p.metadata?.namespace ?? 'default', creationTimestamp: new Date().toISOString() };
    p.metadata.resourceVersion = this.#nextRv();
    this.pods.set(`${p.metadata.namespace}/${p.metadata.name}`, p);
    this.#emit('ADDED', p);
    return clone(p);
  }

  getPod(namespace: string, name: string): Obj | undefined {
    const p = this.pods.get(`${namespace}/${name}`);
    return p ? clone(p) : undefined;
  }

  /** Updates a pod in place (as another client would). */
  updatePod(namespace: string, name: string, change: (pod: Obj) => void): Obj {
    const p = this.pods.get(`${namespace}/${name}`);
    if (!p) throw new Error(`no pod ${namespace}/${name}`);
    change(p);
    p.metadata.resourceVersion = this.#nextRv();
    this.#emit('MODIFIED', p);
    return clone(p);
  }

  /** Graceful delete as `kubectl delete --grace-period N` would ask. */
  deletePod(namespace: string, name: string, grace: number): void {
    const p = this.pods.get(`${namespace}/${name}`);
    if (p) this.#delete(p, grace);
  }

  addNode(name: string): Obj {
    const n = { apiVersion: 'v1', kind: 'Node', metadata: { name, uid: randomUUID(), resourceVersion: this.#nextRv() }, spec: {}, status: {} };
    this.nodes.set(name, n);
    this.#emit('ADDED', n);
    return clone(n);
  }

  /** Changes a Node in place (as kubectl annotate would). */
  updateNode(name: string, change: (node: Obj) => void): Obj {
    const n = this.nodes.get(name);
    if (!n) throw new Error(`no node ${name}`);
    change(n);
    n.metadata.resourceVersion = this.#nextRv();
    this.#emit('MODIFIED', n);
    return clone(n);
  }

  setLease(node: string, renewTime: Date): void {
    this.leases.set(node, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: node, namespace: 'kube-node-lease', uid: randomUUID(), resourceVersion: this.#nextRv() },
      spec: { holderIdentity: node, leaseDurationSeconds: 40, renewTime: renewTime.toISOString() },
    });
  }

  /** A PodDisruptionBudget (policy/v1) with `disruptionsAllowed` evictions left. */
  addPdb(namespace: string, name: string, matchLabels: Obj, disruptionsAllowed: number): void {
    this.pdbs.set(`${namespace}/${name}`, {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name, namespace, resourceVersion: this.#nextRv() },
      spec: { selector: { matchLabels } },
      status: { disruptionsAllowed },
    });
  }

  eventsFor(namespace: string, name: string): Obj[] {
    return [...this.events.values()].filter((e) => e.involvedObject?.namespace === namespace && e.involvedObject?.name === name).map(clone);
  }

  #delete(p: Obj, grace: number): Obj {
    const key = `${p.metadata.namespace}/${p.metadata.name}`;
    const finalizers: string[] = p.metadata.finalizers ?? [];
    const bound = !!p.spec?.nodeName;
    const phaseDone = p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
    if (grace > 0 && bound && !phaseDone) {
      const current = p.metadata.deletionGracePeriodSeconds;
      if (current === undefined || grace < current) {
        p.metadata.deletionGracePeriodSeconds = grace;
        p.metadata.deletionTimestamp = new Date(Date.now() + grace * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
        p.metadata.resourceVersion = this.#nextRv();
        this.#emit('MODIFIED', p);
      }
      return clone(p);
    }
    if (finalizers.length > 0) {
      p.metadata.deletionGracePeriodSeconds = 0;
      p.metadata.deletionTimestamp ??= new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      p.metadata.resourceVersion = this.#nextRv();
      this.#emit('MODIFIED', p);
      return clone(p);
    }
    this.pods.delete(key);
    p.metadata.resourceVersion = this.#nextRv();
    this.#emit('DELETED', p);
    return clone(p);
  }

  // ---- HTTP ----

  #handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const method = req.method ?? 'GET';
      let body: any;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        body = raw;
      }
      const bearer = req.headers.authorization?.startsWith('Bearer ') ? req.headers.authorization.slice('Bearer '.length) : undefined;
      const user = this.token === '' || bearer === this.token ? undefined : bearer !== undefined ? this.users.get(bearer) : undefined;
      const record: RecordedRequest = { method, path: url.pathname, query: url.searchParams, contentType: req.headers['content-type'], body, status: 0, user: user?.username ?? ADMIN, at: Date.now() };
      this.requests.push(record);
      if (this.stall) {
        this.#stalled.add(res);
        res.on('close', () => this.#stalled.delete(res));
        return;
      }
      const send = (code: number, object: Obj, headers: Record<string, string> = {}): void => {
        record.status = code;
        res.writeHead(code, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(object));
      };
      const isWatch = url.searchParams.get('watch') === '1' || url.searchParams.get('watch') === 'true';
      const fault = this.#faults.find((f) => f.left > 0 && (!f.method || f.method === method) && (!f.path || f.path.test(url.pathname)) && (f.watch === undefined || f.watch === isWatch));
      if (fault) {
        fault.left -= 1;
        if (fault.drop) {
          record.status = -1;
          req.socket.destroy();
          return;
        }
        const code = fault.status ?? 500;
        const reason = code === 429 ? 'TooManyRequests' : code === 503 ? 'ServiceUnavailable' : 'InternalError';
        send(
          code,
          status(code, reason, code === 429 ? 'the server has received too many requests and has asked us to try again later' : 'an error on the server has prevented the request from succeeding'),
          fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : {},
        );
        return;
      }
      if (this.token !== '' && req.headers.authorization !== `Bearer ${this.token}` && !user) {
        send(401, status(401, 'Unauthorized', 'Unauthorized'));
        return;
      }
      if (user && this.#refusedByRbac(user, method, url, send)) {
        record.refusedByRbac = true;
        this.onAnswered?.(record);
        return;
      }
      try {
        this.#route(method, url, body, req.headers['content-type'] ?? '', send, res, record, user);
      } catch (error) {
        send(500, status(500, 'InternalError', (error as Error).message));
      }
      this.onAnswered?.(record);
    });
  }

  /** RBAC for a user other than the admin: 403 worded as RBAC does, and its pod lists scoped to its node. */
  #refusedByRbac(user: ApiUser, method: string, url: URL, send: (c: number, o: Obj) => void): boolean {
    const a = attributesOf(method, url.pathname, url.searchParams);
    const refuse = (message: string): true => {
      const [kind] = a.resource.split('/');
      send(403, status(403, 'Forbidden', message, { ...(a.name ? { name: a.name } : {}), ...(a.group ? { group: a.group } : {}), kind }));
      return true;
    };
    if (!authorize(user.rules, a)) return refuse(forbiddenMessage(user.username, a));
    const listsPods = a.group === '' && a.resource === 'pods' && (a.verb === 'list' || a.verb === 'watch');
    if (listsPods && user.podsOfNode !== undefined && !(url.searchParams.get('fieldSelector') ?? '').split(',').includes(`spec.nodeName=${user.podsOfNode}`)) {
      return refuse(`${forbiddenMessage(user.username, a)}: podctl's agent reads only the pods of its node (fieldSelector spec.nodeName=${user.podsOfNode})`);
    }
    return false;
  }

  #forbidden(verb: string, resource: string, namespace: string | undefined, name: string | undefined, send: (c: number, o: Obj) => void): boolean {
    if (!this.forbidden.has(`${verb} ${resource}`)) return false;
    const [res, sub] = resource.split('/');
    const group = res === 'leases' ? 'coordination.k8s.io' : '';
    send(
      403,
      status(
        403,
        'Forbidden',
        `${res}${name ? ` "${name}"` : ''} is forbidden: User "system:serviceaccount:kube-system:podctl" cannot ${verb} resource "${resource}" in API group "${group}"${namespace ? ` in the namespace "${namespace}"` : ''}`,
        { ...(name ? { name } : {}), kind: res, ...(sub ? {} : {}) },
      ),
    );
    return true;
  }

  #route(
    method: string,
    url: URL,
    body: any,
    contentType: string,
    send: (c: number, o: Obj, h?: Record<string, string>) => void,
    res: http.ServerResponse,
    record: RecordedRequest,
    user: ApiUser | undefined,
  ): void {
    const p = url.pathname;
    const q = url.searchParams;
    let m: RegExpMatchArray | null;
    if (method === 'POST' && p === '/apis/authentication.k8s.io/v1/selfsubjectreviews') {
      const userInfo = user
        ? { username: user.username, uid: user.uid, groups: user.groups, ...(Object.keys(user.extra).length > 0 ? { extra: user.extra } : {}) }
        : { username: 'kubernetes-admin', groups: ['system:masters', 'system:authenticated'] };
      send(201, { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview', metadata: { creationTimestamp: null }, status: { userInfo } });
      return;
    }
    if (this.servesAdmissionV1 && method === 'GET' && p === '/apis/admissionregistration.k8s.io/v1') {
      send(200, {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: 'admissionregistration.k8s.io/v1',
        resources: ['validatingadmissionpolicies', 'validatingadmissionpolicybindings', 'validatingwebhookconfigurations', 'mutatingwebhookconfigurations'].map((name) => ({
          name,
          singularName: name.replace(/ies$/, 'y').replace(/s$/, ''),
          namespaced: false,
          kind: '',
          verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
        })),
      });
      return;
    }
    if (this.servesAdmissionV1 && method === 'GET' && (m = p.match(/^\/apis\/admissionregistration\.k8s\.io\/v1\/(validatingadmissionpolicies|validatingadmissionpolicybindings)\/([^/]+)$/))) {
      const [, resource, name] = m as unknown as [string, string, string];
      const o = this.admission.get(`${resource}/${name}`);
      if (!o) send(404, status(404, 'NotFound', `${resource}.admissionregistration.k8s.io "${name}" not found`, { name, group: 'admissionregistration.k8s.io', kind: resource }));
      else send(200, clone(o));
      return;
    }
    if (method === 'GET' && p === '/version') {
      send(200, { major: '1', minor: '31', gitVersion: 'v1.31.0-podctl-test', platform: 'linux/amd64' });
      return;
    }
    if (method === 'GET' && p === '/api') {
      send(200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `127.0.0.1:${this.#port}` }] });
      return;
    }
    if (method === 'GET' && p === '/apis') {
      send(200, { kind: 'APIGroupList', apiVersion: 'v1', groups: [] });
      return;
    }
    if (method === 'GET' && p === '/api/v1') {
      const verbs = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];
      send(200, {
        kind: 'APIResourceList',
        groupVersion: 'v1',
        resources: [
          { name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod', verbs, shortNames: ['po'] },
          { name: 'pods/status', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get', 'patch', 'update'] },
          { name: 'pods/eviction', singularName: '', namespaced: true, group: 'policy', version: 'v1', kind: 'Eviction', verbs: ['create'] },
          { name: 'events', singularName: 'event', namespaced: true, kind: 'Event', verbs, shortNames: ['ev'] },
          { name: 'nodes', singularName: 'node', namespaced: false, kind: 'Node', verbs, shortNames: ['no'] },
        ],
      });
      return;
    }
    if ((m = p.match(/^\/api\/v1\/namespaces\/([^/]+)$/)) && method === 'GET') {
      send(200, { kind: 'Namespace', apiVersion: 'v1', metadata: { name: m[1], resourceVersion: '1' }, status: { phase: 'Active' } });
      return;
    }
    if ((m = p.match(/^\/api\/v1(?:\/namespaces\/([^/]+))?\/pods$/))) {
      const namespace = m[1];
      if (method === 'GET') {
        if (this.#forbidden(q.get('watch') === '1' || q.get('watch') === 'true' ? 'watch' : 'list', 'pods', namespace, undefined, send)) return;
        const nsFilter = (o: Obj): boolean => !namespace || o.metadata.namespace === namespace;
        const fields = fieldFilter(q.get('fieldSelector'));
        const filter = (o: Obj): boolean => nsFilter(o) && fields(o);
        if (q.get('watch') === '1' || q.get('watch') === 'true') {
          this.#watch(q, filter, res, record);
          return;
        }
        const items = [...this.pods.values()].filter(filter).map(clone);
        send(200, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: String(this.#rv) }, items });
        return;
      }
      if (method === 'POST' && namespace) {
        if (this.#forbidden('create', 'pods', namespace, undefined, send)) return;
        if (this.pods.has(`${namespace}/${body?.metadata?.name}`)) {
          send(409, status(409, 'AlreadyExists', `pods "${body.metadata.name}" already exists`, { name: body.metadata.name, kind: 'pods' }));
          return;
        }
        send(201, this.addPod({ ...body, metadata: { ...body.metadata, namespace, uid: undefined } }));
        return;
      }
    }
    if ((m = p.match(/^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)(?:\/(status|eviction))?$/))) {
      const [, namespace, name, sub] = m as unknown as [string, string, string, string | undefined];
      const key = `${namespace}/${name}`;
      const pod = this.pods.get(key);
      const notFound = (): void => send(404, status(404, 'NotFound', `pods "${name}" not found`, { name, kind: 'pods' }));
      if (sub === 'eviction' && method === 'POST') {
        if (this.#forbidden('create', 'pods/eviction', namespace, name, send)) return;
        if (!pod) return notFound();
        const pdb = [...this.pdbs.values()].find((b) => b.metadata.namespace === namespace && labelsMatch(b.spec.selector, pod.metadata.labels));
        if (pdb && !pod.metadata.deletionTimestamp) {
          if (pdb.status.disruptionsAllowed <= 0) {
            send(
              429,
              status(429, 'TooManyRequests', "Cannot evict pod as it would violate the pod's disruption budget.", {
                causes: [{ reason: 'DisruptionBudget', message: `The disruption budget ${pdb.metadata.name} needs ${1} healthy pods and has ${0} currently` }],
              }),
              { 'retry-after': '1' },
            );
            return;
          }
          pdb.status.disruptionsAllowed -= 1;
        }
        const grace = body?.deleteOptions?.gracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
        this.#delete(pod, grace);
        send(201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
        return;
      }
      if (sub === 'status') {
        if (method === 'GET') {
          if (!pod) return notFound();
          send(200, clone(pod));
          return;
        }
        if (method === 'PATCH' || method === 'PUT') {
          if (this.#forbidden(method === 'PATCH' ? 'patch' : 'update', 'pods/status', namespace, name, send)) return;
          if (!pod) return notFound();
          let next: Obj;
          if (method === 'PUT') {
            if (body?.metadata?.resourceVersion !== pod.metadata.resourceVersion) {
              send(
                409,
                status(409, 'Conflict', `Operation cannot be fulfilled on pods "${name}": the object has been modified; please apply your changes to the latest version and try again`, {
                  name,
                  kind: 'pods',
                }),
              );
              return;
            }
            next = { ...clone(pod), status: clone(body.status) };
          } else if (contentType.startsWith('application/merge-patch+json')) next = mergePatch(pod, body);
          else if (contentType.startsWith('application/strategic-merge-patch+json')) next = strategicMergePatch(pod, body);
          else {
            send(
              415,
              status(
                415,
                'UnsupportedMediaType',
                `the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/strategic-merge-patch+json`,
              ),
            );
            return;
          }
          const rvWanted = body?.metadata?.resourceVersion;
          if (method === 'PATCH' && rvWanted !== undefined && rvWanted !== pod.metadata.resourceVersion) {
            send(
              409,
              status(409, 'Conflict', `Operation cannot be fulfilled on pods "${name}": the object has been modified; please apply your changes to the latest version and try again`, {
                name,
                kind: 'pods',
              }),
            );
            return;
          }
          // only the status changes through this subresource
          pod.status = next.status;
          pod.metadata.resourceVersion = this.#nextRv();
          this.#emit('MODIFIED', pod);
          send(200, clone(pod));
          return;
        }
      }
      if (sub === undefined && method === 'GET') {
        if (this.#forbidden('get', 'pods', namespace, name, send)) return;
        if (!pod) return notFound();
        send(200, clone(pod));
        return;
      }
      if (sub === undefined && method === 'DELETE') {
        if (this.#forbidden('delete', 'pods', namespace, name, send)) return;
        if (!pod) return notFound();
        const options: Obj = body ?? {};
        const uid = options.preconditions?.uid;
        if (uid !== undefined && uid !== pod.metadata.uid) {
          send(409, status(409, 'Conflict', `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${pod.metadata.uid}`, { name, kind: 'pods' }));
          return;
        }
        const rv = options.preconditions?.resourceVersion;
        if (rv !== undefined && rv !== pod.metadata.resourceVersion) {
          send(409, status(409, 'Conflict', `Precondition failed: ResourceVersion in precondition: ${rv}, ResourceVersion in object meta: ${pod.metadata.resourceVersion}`, { name, kind: 'pods' }));
          return;
        }
        const queryGrace = q.get('gracePeriodSeconds');
        const grace = options.gracePeriodSeconds ?? (queryGrace !== null ? Number(queryGrace) : undefined) ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
        send(200, this.#delete(pod, grace));
        return;
      }
    }
    if ((m = p.match(/^\/api\/v1\/namespaces\/([^/]+)\/events(?:\/([^/]+))?$/))) {
      const [, namespace, name] = m as unknown as [string, string, string | undefined];
      if (method === 'POST' && !name) {
        if (this.#forbidden('create', 'events', namespace, undefined, send)) return;
        const e = clone(body) as Obj;
        e.metadata ??= {};
        e.metadata.namespace = namespace;
        if (!e.metadata.name) e.metadata.name = `${e.metadata.generateName ?? ''}${randomUUID().slice(0, 8)}`;
        if (this.events.has(`${namespace}/${e.metadata.name}`)) {
          send(409, status(409, 'AlreadyExists', `events "${e.metadata.name}" already exists`, { name: e.metadata.name, kind: 'events' }));
          return;
        }
        e.metadata.uid = randomUUID();
        e.metadata.resourceVersion = this.#nextRv();
        this.events.set(`${namespace}/${e.metadata.name}`, e);
        send(201, clone(e));
        return;
      }
      if (method === 'PATCH' && name) {
        if (this.#forbidden('patch', 'events', namespace, name, send)) return;
        const e = this.events.get(`${namespace}/${name}`);
        if (!e) {
          send(404, status(404, 'NotFound', `events "${name}" not found`, { name, kind: 'events' }));
          return;
        }
        const next = contentType.startsWith('application/strategic-merge-patch+json') ? strategicMergePatch(e, body) : mergePatch(e, body);
        next.metadata.resourceVersion = this.#nextRv();
        this.events.set(`${namespace}/${name}`, next);
        send(200, clone(next));
        return;
      }
      if (method === 'GET' && !name) {
        const items = [...this.events.values()].filter((e) => e.metadata.namespace === namespace).map(clone);
        send(200, { kind: 'EventList', apiVersion: 'v1', metadata: { resourceVersion: String(this.#rv) }, items });
        return;
      }
    }
    if (p === '/api/v1/nodes' && method === 'GET') {
      const watching = q.get('watch') === '1' || q.get('watch') === 'true';
      if (this.#forbidden(watching ? 'watch' : 'list', 'nodes', undefined, undefined, send)) return;
      const filter = fieldFilter(q.get('fieldSelector'));
      if (watching) {
        this.#watch(q, filter, res, record, 'Node');
        return;
      }
      const items = [...this.nodes.values()].filter(filter).map(clone);
      send(200, { kind: 'NodeList', apiVersion: 'v1', metadata: { resourceVersion: String(this.#rv) }, items });
      return;
    }
    if ((m = p.match(/^\/api\/v1\/nodes\/([^/]+)$/))) {
      const name = m[1]!;
      const node = this.nodes.get(name);
      if (method === 'GET' || method === 'PATCH') {
        if (this.#forbidden(method === 'GET' ? 'get' : 'patch', 'nodes', undefined, name, send)) return;
        if (!node) {
          send(404, status(404, 'NotFound', `nodes "${name}" not found`, { name, kind: 'nodes' }));
          return;
        }
        if (method === 'PATCH') {
          const next = contentType.startsWith('application/strategic-merge-patch+json') ? strategicMergePatch(node, body) : mergePatch(node, body);
          next.metadata.resourceVersion = this.#nextRv();
          this.nodes.set(name, next);
          this.#emit('MODIFIED', next);
          send(200, clone(next));
          return;
        }
        send(200, clone(node));
        return;
      }
    }
    if ((m = p.match(/^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/kube-node-lease\/leases(?:\/([^/]+))?$/))) {
      const name = m[1];
      if (method === 'GET' && name) {
        if (this.#forbidden('get', 'leases', 'kube-node-lease', name, send)) return;
        const lease = this.leases.get(name);
        if (!lease) {
          send(404, status(404, 'NotFound', `leases.coordination.k8s.io "${name}" not found`, { name, group: 'coordination.k8s.io', kind: 'leases' }));
          return;
        }
        send(200, clone(lease));
        return;
      }
    }
    if ((m = p.match(/^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases(?:\/([^/]+))?$/)) && m[1] !== 'kube-node-lease') {
      if (this.#leaseRequest(method, m[1]!, m[2], body, send)) return;
    }
    send(404, status(404, 'NotFound', 'the server could not find the requested resource'));
  }

  /**
   * Leases outside kube-node-lease (the drain lock), as the real server keeps them: GET by name,
   * POST (409 AlreadyExists when the name is taken), PUT at the resourceVersion read (409 Conflict
   * when it changed since). Returns false for what it does not serve.
   */
  #leaseRequest(method: string, namespace: string, name: string | undefined, body: any, send: (c: number, o: Obj) => void): boolean {
    const notFound = (n: string): void => send(404, status(404, 'NotFound', `leases.coordination.k8s.io "${n}" not found`, { name: n, group: 'coordination.k8s.io', kind: 'leases' }));
    if (method === 'GET' && name) {
      if (this.#forbidden('get', 'leases', namespace, name, send)) return true;
      const lease = this.namespacedLeases.get(`${namespace}/${name}`);
      if (!lease) notFound(name);
      else send(200, clone(lease));
      return true;
    }
    if (method === 'POST' && !name) {
      if (this.#forbidden('create', 'leases', namespace, undefined, send)) return true;
      const leaseName = String(body?.metadata?.name ?? '');
      if (this.namespacedLeases.has(`${namespace}/${leaseName}`)) {
        send(409, status(409, 'AlreadyExists', `leases.coordination.k8s.io "${leaseName}" already exists`, { name: leaseName, group: 'coordination.k8s.io', kind: 'leases' }));
        return true;
      }
      const lease = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: leaseName, namespace, uid: randomUUID(), resourceVersion: this.#nextRv() },
        spec: clone(body?.spec ?? {}),
      };
      this.namespacedLeases.set(`${namespace}/${leaseName}`, lease);
      send(201, clone(lease));
      return true;
    }
    if (method === 'PUT' && name) {
      if (this.#forbidden('update', 'leases', namespace, name, send)) return true;
      const lease = this.namespacedLeases.get(`${namespace}/${name}`);
      if (!lease) return (notFound(name), true);
      if (body?.metadata?.resourceVersion !== lease.metadata.resourceVersion) {
        send(
          409,
          status(
            409,
            'Conflict',
            `Operation cannot be fulfilled on leases.coordination.k8s.io "${name}": the object has been modified; please apply your changes to the latest version and try again`,
            {
              name,
              group: 'coordination.k8s.io',
              kind: 'leases',
            },
          ),
        );
        return true;
      }
      lease.spec = clone(body?.spec ?? {});
      lease.metadata.resourceVersion = this.#nextRv();
      send(200, clone(lease));
      return true;
    }
    return false;
  }

  #watch(q: URLSearchParams, filter: (o: Obj) => boolean, res: http.ServerResponse, record: RecordedRequest, kind = 'Pod'): void {
    record.status = 200;
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders(); // as the real server does: the client knows the watch is open before any event
    const from = q.get('resourceVersion');
    const watcher: Watcher = { res, filter, bookmarks: q.get('allowWatchBookmarks') === 'true' || q.get('allowWatchBookmarks') === '1', kind, silent: false };
    const objects = kind === 'Node' ? this.nodes : this.pods;
    if (from && from !== '0' && Number(from) < this.#compactedBelow - 1) {
      res.end(`${JSON.stringify({ type: 'ERROR', object: status(410, 'Expired', `too old resource version: ${from} (${this.#compactedBelow - 1})`) })}\n`);
      return;
    }
    if (!from || from === '0') {
      // no resourceVersion: the current state as synthetic ADDED events first
      for (const o of objects.values()) if (filter(o)) res.write(`${JSON.stringify({ type: 'ADDED', object: clone(o) })}\n`);
    } else {
      for (const e of this.#history) if (e.rv > Number(from) && (e.object.kind ?? 'Pod') === kind && filter(e.object)) res.write(`${JSON.stringify({ type: e.type, object: e.object })}\n`);
    }
    this.#watchers.add(watcher);
    const timeout = Number(q.get('timeoutSeconds') ?? 0);
    const timer = timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : undefined;
    res.on('close', () => {
      clearTimeout(timer);
      this.#watchers.delete(watcher);
    });
  }
}

export async function startKubeApiServer(): Promise<KubeApiServer> {
  return new KubeApiServer().start(0);
}
