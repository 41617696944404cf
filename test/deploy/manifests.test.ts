/**
 * The cluster manifests in deploy/: every object validates against the Kubernetes object schemas
 * offline (kubernetes-models); the ClusterRole holds exactly the verbs podctl uses; the node
 * restriction's CEL expressions are evaluated (@bufbuild/cel) on sample admission requests; the
 * DaemonSet has what a node agent beside the kubelet needs; kustomization.yaml lists every file.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { run } from '@bufbuild/cel';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { Service } from 'kubernetes-models/v1/Service';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { ValidatingAdmissionPolicy } from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy';
import { ValidatingAdmissionPolicyBinding } from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding';

const DEPLOY = path.join(process.cwd(), 'deploy');

type Obj = Record<string, any>;

function load(file: string): Obj[] {
  return parseAllDocuments(readFileSync(path.join(DEPLOY, file), 'utf8'))
    .map((d) => d.toJSON() as Obj)
    .filter(Boolean);
}

const MODELS: Record<string, new (o: any) => { validate(): void }> = {
  'v1/Namespace': Namespace,
  'v1/ServiceAccount': ServiceAccount,
  'apps/v1/DaemonSet': DaemonSet,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy': ValidatingAdmissionPolicy,
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding': ValidatingAdmissionPolicyBinding,
};

const kustomization = load('kustomization.yaml')[0]!;
const objects = (kustomization.resources as string[]).flatMap((file) => load(file).map((o) => ({ file, o })));
const find = (kind: string, name?: string): Obj => objects.find(({ o }) => o.kind === kind && (name === undefined || o.metadata?.name === name))!.o;

/** CEL sees JSON objects as maps. */
function cel(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(cel);
  if (value && typeof value === 'object') return new Map(Object.entries(value).map(([k, v]) => [k, cel(v)]));
  return value;
}

describe('deploy/ manifests', () => {
  it('kustomization.yaml lists every manifest (the optional PodMonitor aside)', () => {
    const files = readdirSync(DEPLOY)
      .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
      .sort();
    expect([...(kustomization.resources as string[])].sort()).toEqual(files);
  });

  it('every object validates against the Kubernetes schemas', () => {
    expect(objects.length).toBeGreaterThanOrEqual(9);
    for (const { file, o } of objects) {
      const Model = MODELS[`${o.apiVersion}/${o.kind}`];
      expect(Model, `${file}: no schema for ${o.apiVersion} ${o.kind}`).toBeDefined();
      expect(() => new Model!(o).validate(), `${file}: ${o.kind} ${o.metadata?.name}`).not.toThrow();
    }
    // a broken object is caught (the check can fail)
    const broken = structuredClone(find('DaemonSet'));
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'metrics';
    expect(() => new DaemonSet(broken).validate()).toThrow();
  });

  it('the ClusterRole holds exactly the verbs podctl uses: no wildcards, no secrets; leases only in kube-node-lease and, for the drain lock, by name in its own namespace', () => {
    const role = find('ClusterRole', 'podctl-agent');
    const grants = new Set<string>();
    for (const rule of role.rules as Obj[]) {
      for (const group of rule.apiGroups) for (const resource of rule.resources) for (const verb of rule.verbs) grants.add(`${group || 'core'}/${resource}:${verb}`);
    }
    expect([...grants].sort()).toEqual([
      'admissionregistration.k8s.io/validatingadmissionpolicies:get',
      'admissionregistration.k8s.io/validatingadmissionpolicybindings:get',
      'core/events:create',
      'core/nodes:get',
      'core/nodes:list',
      'core/nodes:patch',
      'core/nodes:watch',
      'core/pods/eviction:create',
      'core/pods/status:patch',
      'core/pods:delete',
      'core/pods:get',
      'core/pods:list',
      'core/pods:watch',
    ]);
    // the admission objects are read by name: exactly the policy and its binding
    const admission = (role.rules as Obj[]).filter((r) => r.apiGroups.includes('admissionregistration.k8s.io'));
    expect(admission).toHaveLength(1);
    expect(admission[0]!.resourceNames).toEqual([find('ValidatingAdmissionPolicy').metadata.name]);
    expect(find('ValidatingAdmissionPolicyBinding').metadata.name).toBe(find('ValidatingAdmissionPolicy').metadata.name);
    for (const rule of (role.rules as Obj[]).filter((r) => r !== admission[0])) expect(rule.resourceNames).toBeUndefined();
    const allRules = objects.filter(({ o }) => o.kind === 'ClusterRole' || o.kind === 'Role').flatMap(({ o }) => o.rules as Obj[]);
    for (const rule of allRules) {
      for (const field of ['apiGroups', 'resources', 'verbs']) expect(rule[field], field).not.toContain('*');
      expect(rule.resources).not.toContain('secrets');
    }
    const lease = find('Role', 'podctl-node-lease-reader');
    expect(lease.metadata.namespace).toBe('kube-node-lease');
    expect(lease.rules).toEqual([{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get'] }]);
    // the drain lock: only in the agent's namespace; get/update only on its slots' names (agent --max-draining-nodes at most 5)
    const lock = find('Role', 'podctl-drain-lock');
    expect(lock.metadata.namespace).toBe(find('DaemonSet').metadata.namespace);
    expect(lock.rules).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [0, 1, 2, 3, 4].map((i) => `podctl-drain-${i}`), verbs: ['get', 'update'] },
    ]);
  });

  describe('the node restriction (ValidatingAdmissionPolicy), evaluated', () => {
    const policy = find('ValidatingAdmissionPolicy');
    const binding = find('ValidatingAdmissionPolicyBinding');
    const SA = 'system:serviceaccount:podctl-system:podctl';

    /** What the API server would do with this request: allowed, or the first failed validation's reason. */
    function admit(request: Obj, object: Obj | null, oldObject: Obj | null): { matched: boolean; allowed: boolean; message?: string } {
      const activation = { request: cel(request), object: cel(object), oldObject: cel(oldObject) } as Record<string, unknown>;
      for (const condition of policy.spec.matchConditions as Obj[]) {
        if (run(condition.expression, activation as never) !== true) return { matched: false, allowed: true };
      }
      const variables = new Map<string, unknown>();
      for (const v of policy.spec.variables as Obj[]) variables.set(v.name, run(v.expression, { ...activation, variables } as never));
      for (const validation of policy.spec.validations as Obj[]) {
        let ok: unknown;
        try {
          ok = run(validation.expression, { ...activation, variables } as never);
        } catch {
          ok = false; // failurePolicy Fail: an error denies
        }
        if (ok !== true) {
          const text: unknown = validation.messageExpression ? run(validation.messageExpression, { ...activation, variables } as never) : validation.message;
          const message = typeof text === 'string' ? text : JSON.stringify(text);
          return { matched: true, allowed: false, message };
        }
      }
      return { matched: true, allowed: true };
    }

    const userInfo = (node?: string) => ({ username: SA, ...(node ? { extra: { 'authentication.kubernetes.io/node-name': [node] } } : {}) });
    const pod = (node: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'app' }, spec: { nodeName: node } });

    it('is bound with Deny and fails closed', () => {
      expect(binding.spec).toEqual({ policyName: policy.metadata.name, validationActions: ['Deny'] });
      expect(policy.spec.failurePolicy).toBe('Fail');
    });

    it('own node: deleting or patching the status of its pods, and patching its Node, are allowed', () => {
      expect(admit({ operation: 'DELETE', userInfo: userInfo('node-1'), resource: { resource: 'pods' }, name: 'web' }, null, pod('node-1'))).toEqual({ matched: true, allowed: true });
      expect(admit({ operation: 'UPDATE', subResource: 'status', userInfo: userInfo('node-1'), resource: { resource: 'pods' }, name: 'web' }, pod('node-1'), pod('node-1')).allowed).toBe(true);
      expect(
        admit(
          { operation: 'UPDATE', subResource: '', userInfo: userInfo('node-1'), resource: { resource: 'nodes' }, name: 'node-1' },
          { metadata: { name: 'node-1' }, spec: {} },
          { metadata: { name: 'node-1' }, spec: {} },
        ).allowed,
      ).toBe(true);
    });

    it('another node: its pods and its Node are denied, with a message naming the node', () => {
      const del = admit({ operation: 'DELETE', userInfo: userInfo('node-1'), resource: { resource: 'pods' }, name: 'web' }, null, pod('node-2'));
      expect(del).toEqual({ matched: true, allowed: false, message: 'podctl on node node-1 may change only pods bound to it' });
      const node = admit(
        { operation: 'UPDATE', subResource: '', userInfo: userInfo('node-1'), resource: { resource: 'nodes' }, name: 'node-2' },
        { metadata: { name: 'node-2' }, spec: {} },
        { metadata: { name: 'node-2' }, spec: {} },
      );
      expect(node.allowed).toBe(false);
      expect(node.message).toBe('podctl on node node-1 may change only its own Node, not node-2');
    });

    it('its own Node: the cordon and podctl.io/ annotations may change; a label, a taint, another annotation, a finalizer, an owner reference, another spec field, the status or its deletion may not', () => {
      const before = {
        metadata: { name: 'node-1', labels: { 'node-role.kubernetes.io/worker': '', zone: 'a' }, annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'podctl.io/drain': 'requested' } },
        spec: { podCIDR: '10.0.1.0/24', podCIDRs: ['10.0.1.0/24'], providerID: 'kind://node-1', taints: [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }] },
      };
      const change = (edit: (node: Obj) => void, subResource = ''): { allowed: boolean; message?: string } => {
        const after = structuredClone(before) as Obj;
        edit(after);
        return admit({ operation: 'UPDATE', subResource, userInfo: userInfo('node-1'), resource: { resource: 'nodes' }, name: 'node-1' }, after, before);
      };
      // what podctl writes: the cordon and its own annotations (set, changed, removed)
      expect(change((n) => (n.spec.unschedulable = true)).allowed).toBe(true);
      expect(change((n) => (n.metadata.annotations['podctl.io/drain'] = 'draining')).allowed).toBe(true);
      expect(change((n) => (n.metadata.annotations['podctl.io/drain-report'] = '/var/lib/podctl/reports/x.json')).allowed).toBe(true);
      expect(change((n) => delete n.metadata.annotations['podctl.io/drain']).allowed).toBe(true);
      expect(change(() => {}).allowed).toBe(true);
      // everything else is denied, each with its own message
      const denied: [string, (n: Obj) => void, RegExp][] = [
        ['a label changed', (n) => (n.metadata.labels.zone = 'b'), /labels/],
        ['a label added', (n) => (n.metadata.labels['node-role.kubernetes.io/control-plane'] = ''), /labels/],
        ['the labels removed', (n) => delete n.metadata.labels, /labels/],
        ['a taint added', (n) => n.spec.taints.push({ key: 'x', effect: 'NoExecute' }), /no taint/],
        ['the taints removed', (n) => delete n.spec.taints, /no taint/],
        ['another annotation changed', (n) => (n.metadata.annotations['node.alpha.kubernetes.io/ttl'] = '30'), /podctl\.io\//],
        ['another annotation added', (n) => (n.metadata.annotations['cluster-autoscaler.kubernetes.io/scale-down-disabled'] = 'true'), /podctl\.io\//],
        ['another annotation removed', (n) => delete n.metadata.annotations['node.alpha.kubernetes.io/ttl'], /podctl\.io\//],
        ['a look-alike prefix', (n) => (n.metadata.annotations['podctl.io.evil/x'] = 'y'), /podctl\.io\//],
        ['the podCIDR', (n) => (n.spec.podCIDR = '10.0.9.0/24'), /no other field/],
        ['the providerID', (n) => (n.spec.providerID = 'kind://node-9'), /no other field/],
        ['a finalizer added', (n) => (n.metadata.finalizers = ['example.com/hold']), /finalizers or owner references/],
        ['an owner reference added', (n) => (n.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'u' }]), /finalizers or owner references/],
      ];
      for (const [what, edit, message] of denied) {
        const verdict = change(edit);
        expect(verdict.allowed, what).toBe(false);
        expect(verdict.message, what).toMatch(message);
      }
      expect(change((n) => (n.spec.unschedulable = true), 'status')).toMatchObject({ allowed: false, message: "podctl may not change a Node's status" });
      const remove = admit({ operation: 'DELETE', subResource: '', userInfo: userInfo('node-1'), resource: { resource: 'nodes' }, name: 'node-1' }, null, before);
      expect(remove).toMatchObject({ allowed: false, message: 'podctl may not delete a Node' });
    });

    it("a token without the node claim is denied; other users are not this policy's business", () => {
      const noClaim = admit({ operation: 'DELETE', userInfo: userInfo(), resource: { resource: 'pods' }, name: 'web' }, null, pod('node-1'));
      expect(noClaim.allowed).toBe(false);
      expect(noClaim.message).toMatch(/not bound to a node/);
      expect(admit({ operation: 'DELETE', userInfo: { username: 'admin' }, resource: { resource: 'pods' }, name: 'web' }, null, pod('node-2'))).toEqual({ matched: false, allowed: true });
    });
  });

  it('the DaemonSet: host PID and network, every taint tolerated, node-critical, readiness on /readyz and liveness on /healthz, node-bound token, hardened (no capability, seccomp, read-only root), no hostPath created but its own', () => {
    const ds = find('DaemonSet');
    const spec = ds.spec.template.spec;
    const agent = spec.containers[0];
    expect(spec).toMatchObject({ hostPID: true, hostNetwork: true, priorityClassName: 'system-node-critical', automountServiceAccountToken: false, serviceAccountName: 'podctl' });
    expect(spec.tolerations).toEqual([{ operator: 'Exists' }]);
    expect(agent.args[0]).toBe('agent');
    expect(agent.args).toContain('--metrics-addr=$(NODE_IP):9640');
    expect(agent.env).toEqual([
      { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
      { name: 'NODE_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
      // the agent knows its own pod by its UID (agentSelf), not by a cgroup path that may read `0::/`
      { name: 'POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
    ]);
    expect(agent.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 9640 });
    expect(agent.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 9640 });
    // hardened: no capability, the runtime's seccomp profile (measured: test/sea/agent-pod.test.ts runs with exactly this)
    expect(agent.securityContext).toEqual({
      runAsUser: 0,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    // no hostPath the agent reads is created: only podctl's own state directory may be
    const hostPaths = Object.fromEntries((spec.volumes as Obj[]).filter((v) => v.hostPath).map((v) => [v.hostPath.path, v.hostPath.type]));
    expect(hostPaths).toEqual({ '/run/containerd': 'Directory', '/var/lib/kubelet/pods': 'Directory', '/var/lib/podctl': 'DirectoryOrCreate' });
    expect(agent.resources.limits.memory).toBe('256Mi');
    const mounts = Object.fromEntries(agent.volumeMounts.map((m: Obj) => [m.mountPath, m]));
    expect(mounts['/var/lib/kubelet/pods']).toMatchObject({ readOnly: true });
    expect(Object.keys(mounts)).toEqual(expect.arrayContaining(['/run/containerd', '/var/lib/podctl', '/var/run/secrets/kubernetes.io/serviceaccount']));
    const token = spec.volumes.find((v: Obj) => v.name === 'token');
    expect(token.projected.sources[0].serviceAccountToken).toMatchObject({ path: 'token' });
    expect(ds.spec.template.metadata.annotations).toMatchObject({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9640' });
  });

  it("the optional ServiceMonitor: a headless Service (valid) over the agents' metrics port, and the monitor selecting it", () => {
    const [service, monitor] = load('optional/servicemonitor.yaml');
    expect(() => new Service(service).validate()).not.toThrow();
    expect(service).toMatchObject({ spec: { clusterIP: 'None', selector: { 'app.kubernetes.io/name': 'podctl' }, ports: [{ name: 'metrics', port: 9640 }] } });
    expect(monitor).toMatchObject({
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      spec: { selector: { matchLabels: service!.metadata.labels }, endpoints: [{ port: 'metrics', path: '/metrics' }] },
    });
  });

  it("the optional PodMonitor scrapes the agents' metrics port", () => {
    const [monitor] = load('optional/podmonitor.yaml');
    expect(monitor).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PodMonitor', spec: { selector: { matchLabels: { 'app.kubernetes.io/name': 'podctl' } } } });
    expect(monitor!.spec.podMetricsEndpoints[0]).toMatchObject({ port: 'metrics', path: '/metrics' });
    expect(find('DaemonSet').spec.template.spec.containers[0].ports[0].name).toBe('metrics');
  });
});
