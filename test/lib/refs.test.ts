import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/lib/errors.js';
import { describeSelection, parseRef, parseSelection, resolveSelection } from '../../src/lib/refs.js';
import { FakeSession } from '../services/fake-session.js';

const session = new FakeSession([
  { namespace: 'web', name: 'frontend-1', labels: { app: 'frontend' } },
  { namespace: 'web', name: 'api-1', labels: { app: 'api' } },
  { namespace: 'default', name: 'worker-1', labels: { app: 'worker' } },
  { namespace: 'default', name: 'frontend-1', labels: { app: 'frontend' } },
  { namespace: 'kube-system', name: 'etcd', static: true },
]);
const pods = await session.listPods();
const names = (list: { namespace: string; name: string }[]): string[] => list.map((p) => `${p.namespace}/${p.name}`);

describe('parseRef', () => {
  it('reads ns/name and name with -n (default namespace "default")', () => {
    expect(parseRef('web/api-1', undefined)).toEqual({ kind: 'name', namespace: 'web', name: 'api-1' });
    expect(parseRef('api-1', 'web')).toEqual({ kind: 'name', namespace: 'web', name: 'api-1' });
    expect(parseRef('api-1', undefined)).toEqual({ kind: 'name', namespace: 'default', name: 'api-1' });
    expect(parseRef('web/api-1', 'web')).toEqual({ kind: 'name', namespace: 'web', name: 'api-1' });
  });

  it("reads kubectl's pod/NAME (also pods/, po/) as the pod NAME in -n's namespace", () => {
    expect(parseRef('pod/api-1', undefined)).toEqual({ kind: 'name', namespace: 'default', name: 'api-1' });
    expect(parseRef('pods/api-1', 'web')).toEqual({ kind: 'name', namespace: 'web', name: 'api-1' });
    expect(parseRef('po/api-1', 'web')).toEqual({ kind: 'name', namespace: 'web', name: 'api-1' });
    expect(() => parseRef('pod/API', undefined)).toThrow(/valid Kubernetes name/);
  });

  it('an empty -n is a usage error, not a search of namespace ""', () => {
    expect(() => parseSelection({ args: ['foo'], namespace: '' })).toThrow(/-n\/--namespace: empty namespace/);
    expect(() => parseSelection({ args: ['foo'], namespace: '  ' })).toThrow(UsageError);
  });

  it.each([
    ['a/b/c', undefined, /not ns\/name/],
    ['/x', undefined, /not ns\/name/],
    ['web/', undefined, /not ns\/name/],
    ['Web/API', undefined, /valid Kubernetes name/],
    ['web/api-1', 'prod', /-n is prod/],
    ['-x', undefined, /valid Kubernetes name/],
  ])('rejects %j (-n %s)', (text, ns, message) => {
    expect(() => parseRef(text, ns)).toThrow(message);
  });
});

describe('parseSelection', () => {
  it('needs some pods for destructive commands', () => {
    expect(() => parseSelection({ args: [] })).toThrow(UsageError);
    expect(() => parseSelection({ args: [] })).toThrow(expect.objectContaining({ hint: expect.stringMatching(/--uid, -l key=value, --field-selector or --all/) }));
  });

  it('refuses contradictions, naming the flags', () => {
    expect(() => parseSelection({ args: ['a'], all: true })).toThrow(/--all cannot be combined with REF/);
    expect(() => parseSelection({ args: [], selector: 'a=b', all: true })).toThrow(/--all cannot be combined with -l/);
    expect(() => parseSelection({ args: ['a'], selector: 'a=b' })).toThrow(/REF\/--uid cannot be combined with -l/);
    expect(() => parseSelection({ args: [], all: true, namespace: 'x', allNamespaces: true })).toThrow(/mutually exclusive/);
    expect(() => parseSelection({ args: [], uids: ['bad uid!'] })).toThrow(/--uid/);
  });

  it('scopes --all and -l to -n, "default", or every namespace with -A', () => {
    expect(parseSelection({ args: [], all: true }).namespace).toBe('default');
    expect(parseSelection({ args: [], all: true, namespace: 'web' }).namespace).toBe('web');
    expect(parseSelection({ args: [], all: true, allNamespaces: true }).namespace).toBeUndefined();
    expect(parseSelection({ args: [], allowEmpty: true, defaultAllNamespaces: true }).namespace).toBeUndefined();
  });
});

describe('resolveSelection', () => {
  it('resolves refs, reporting the missing ones', () => {
    const r = resolveSelection(pods, parseSelection({ args: ['web/api-1', 'nope', 'default/worker-1'] }));
    expect(names(r.targets)).toEqual(['default/worker-1', 'web/api-1']);
    expect(r.missing).toEqual(['default/nope']);
  });

  it('resolves UIDs and never returns a pod twice', () => {
    const uid = session.uidOf('web', 'api-1');
    const r = resolveSelection(pods, parseSelection({ args: ['web/api-1'], uids: [uid, 'not-a-pod'] }));
    expect(names(r.targets)).toEqual(['web/api-1']);
    expect(r.missing).toEqual(['uid not-a-pod']);
  });

  it('accepts a unique UID prefix, as crictl accepts ID prefixes; an ambiguous one names the pods it fits', () => {
    const uid = session.uidOf('web', 'api-1');
    const prefix = uid.slice(0, 8);
    expect(pods.filter((p) => p.uid.startsWith(prefix))).toHaveLength(1);
    expect(names(resolveSelection(pods, parseSelection({ args: [], uids: [prefix] })).targets)).toEqual(['web/api-1']);
    // the start all the fake UIDs share
    const shared = 'uid-00';
    expect(() => resolveSelection(pods, parseSelection({ args: [], uids: [shared] }))).toThrow(UsageError);
    expect(() => resolveSelection(pods, parseSelection({ args: [], uids: [shared] }))).toThrow(/--uid uid-00 is the start of 5 pods' UIDs: .*web\/api-1/);
    // too short to be taken as a prefix: simply not found
    expect(resolveSelection(pods, parseSelection({ args: [], uids: ['uid'] })).missing).toEqual(['uid uid']);
  });

  it('applies -l within the namespace scope', () => {
    expect(names(resolveSelection(pods, parseSelection({ args: [], selector: 'app=frontend' })).targets)).toEqual(['default/frontend-1']);
    expect(names(resolveSelection(pods, parseSelection({ args: [], selector: 'app=frontend', allNamespaces: true })).targets)).toEqual(['default/frontend-1', 'web/frontend-1']);
  });

  it('--all -A takes every pod, sorted by namespace then name', () => {
    expect(names(resolveSelection(pods, parseSelection({ args: [], all: true, allNamespaces: true })).targets)).toEqual([
      'default/frontend-1',
      'default/worker-1',
      'kube-system/etcd',
      'web/api-1',
      'web/frontend-1',
    ]);
  });

  it('describes selections for messages', () => {
    expect(describeSelection(parseSelection({ args: [], selector: 'app=x' }))).toBe('-l app=x in namespace default');
    expect(describeSelection(parseSelection({ args: [], all: true, allNamespaces: true }))).toBe('all pods in every namespace');
  });
});
