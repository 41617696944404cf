/**
 * RBAC for the local API server (kube-api-server.ts), as the real authorizer decides it: the request's
 * attributes (verb, API group, resource/subresource, namespace, name) read from its path and method,
 * checked against the rules of the (Cluster)Roles bound to a user — here the podctl ServiceAccount's,
 * loaded from the shipped manifests in deploy/, so the tests run under exactly the RBAC podctl ships.
 * Every authenticated user also holds what Kubernetes' default roles give everyone
 * (system:discovery, system:basic-user): discovery and SelfSubjectReview.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

type Obj = Record<string, any>;

interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

/** A rule and where it applies (a Role's namespace; undefined: cluster-wide, from a ClusterRoleBinding). */
export interface ScopedRule {
  namespace?: string;
  rule: PolicyRule;
}

export interface RequestAttributes {
  verb: string;
  /** '' for the core group. */
  group: string;
  /** 'pods', 'pods/eviction' (resource/subresource). */
  resource: string;
  namespace?: string;
  name?: string;
  /** Set for non-resource requests (/version, /api, /apis/…): the path. */
  nonResource?: string;
}

export const PODCTL_SERVICE_ACCOUNT = { namespace: 'podctl-system', name: 'podctl' };
export const PODCTL_USERNAME = `system:serviceaccount:${PODCTL_SERVICE_ACCOUNT.namespace}:${PODCTL_SERVICE_ACCOUNT.name}`;

/** What every authenticated user may do (Kubernetes' system:discovery and system:basic-user). */
const EVERYONE: PolicyRule[] = [
  { verbs: ['get'], nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/version', '/version/', '/healthz', '/livez', '/readyz'] },
  { apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'], verbs: ['create'] },
  { apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'], verbs: ['create'] },
];

/** The rules bound to podctl's ServiceAccount by the manifests in `dir` (deploy/), cluster-wide and per namespace. */
export function loadShippedRbac(dir = path.join(process.cwd(), 'deploy')): ScopedRule[] {
  const objects: Obj[] = readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .flatMap((f) => parseAllDocuments(readFileSync(path.join(dir, f), 'utf8')).map((d) => d.toJSON() as Obj))
    .filter((o) => o?.apiVersion === 'rbac.authorization.k8s.io/v1');
  const isPodctl = (subject: Obj): boolean => subject.kind === 'ServiceAccount' && subject.name === PODCTL_SERVICE_ACCOUNT.name && subject.namespace === PODCTL_SERVICE_ACCOUNT.namespace;
  const roleOf = (kind: string, name: string, namespace?: string): Obj | undefined =>
    objects.find((o) => o.kind === kind && o.metadata?.name === name && (kind === 'ClusterRole' || o.metadata?.namespace === namespace));
  const rules: ScopedRule[] = [];
  for (const binding of objects.filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding')) {
    if (!(binding.subjects as Obj[] | undefined)?.some(isPodctl)) continue;
    const namespace: string | undefined = binding.kind === 'RoleBinding' ? binding.metadata.namespace : undefined;
    const role = roleOf(binding.roleRef.kind, binding.roleRef.name, namespace);
    if (!role) throw new Error(`deploy/: ${binding.kind} ${binding.metadata.name} refers to ${binding.roleRef.kind} ${binding.roleRef.name}, which deploy/ does not define`);
    for (const rule of role.rules as PolicyRule[]) rules.push(namespace ? { namespace, rule } : { rule });
  }
  if (rules.length === 0) throw new Error(`deploy/: nothing is bound to ${PODCTL_USERNAME}`);
  return rules;
}

/** The request's RBAC attributes, from its method, path and query, as the API server reads them. */
export function attributesOf(method: string, pathname: string, query: URLSearchParams): RequestAttributes {
  const parts = pathname.split('/').filter(Boolean);
  let group: string;
  let rest: string[];
  if (parts[0] === 'api' && parts.length > 2) {
    group = '';
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length > 3) {
    group = parts[1]!;
    rest = parts.slice(3);
  } else {
    return { verb: method.toLowerCase(), group: '', resource: '', nonResource: pathname };
  }
  let namespace: string | undefined;
  let resource: string;
  let name: string | undefined;
  let sub: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    [, , resource = '', name, sub] = rest;
  } else {
    [resource = '', name, sub] = rest;
  }
  const watch = query.get('watch') === '1' || query.get('watch') === 'true';
  const verb =
    method === 'GET'
      ? name === undefined
        ? watch
          ? 'watch'
          : 'list'
        : 'get'
      : method === 'POST'
        ? 'create'
        : method === 'PUT'
          ? 'update'
          : method === 'PATCH'
            ? 'patch'
            : method === 'DELETE'
              ? name === undefined
                ? 'deletecollection'
                : 'delete'
              : method.toLowerCase();
  return { verb, group, resource: sub ? `${resource}/${sub}` : resource, ...(namespace !== undefined ? { namespace } : {}), ...(name !== undefined ? { name } : {}) };
}

const has = (list: string[] | undefined, value: string): boolean => list !== undefined && (list.includes('*') || list.includes(value));

function ruleAllows(rule: PolicyRule, a: RequestAttributes): boolean {
  if (a.nonResource !== undefined) {
    return has(rule.verbs, a.verb) && (rule.nonResourceURLs ?? []).some((u) => u === '*' || u === a.nonResource || (u.endsWith('*') && a.nonResource!.startsWith(u.slice(0, -1))));
  }
  if (!has(rule.verbs, a.verb) || !has(rule.apiGroups, a.group) || !has(rule.resources, a.resource)) return false;
  // resourceNames restrict requests that name an object (a list or a create names none: not allowed by such a rule)
  return !rule.resourceNames || rule.resourceNames.length === 0 || (a.name !== undefined && rule.resourceNames.includes(a.name));
}

/** Does RBAC allow it? Namespaced rules (a Role) apply only in their namespace. */
export function authorize(rules: ScopedRule[], a: RequestAttributes): boolean {
  if (EVERYONE.some((rule) => ruleAllows(rule, a))) return true;
  return rules.some((r) => (r.namespace === undefined || r.namespace === a.namespace) && ruleAllows(r.rule, a));
}

/** The 403 message RBAC gives, e.g. `pods "web" is forbidden: User "…" cannot delete resource "pods" in API group "" in the namespace "app"`. */
export function forbiddenMessage(username: string, a: RequestAttributes): string {
  if (a.nonResource !== undefined) return `forbidden: User "${username}" cannot ${a.verb} path "${a.nonResource}"`;
  const [resource] = a.resource.split('/');
  const qualified = a.group ? `${resource}.${a.group}` : resource;
  const scope = a.namespace ? `in the namespace "${a.namespace}"` : 'at the cluster scope';
  return `${qualified}${a.name ? ` "${a.name}"` : ''} is forbidden: User "${username}" cannot ${a.verb} resource "${a.resource}" in API group "${a.group}" ${scope}`;
}
