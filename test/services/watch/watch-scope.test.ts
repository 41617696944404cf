/**
 * `watch -n/-l` (services/watch/watch-scope.ts): the scoped view of the feed shows only the pods in scope,
 * their transitions and events, and events about no pod; it hands out one object per feed snapshot.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WatchFeed, type FeedChange } from '../../../src/services/watch/watch-feed.js';
import { ScopedFeed, describeScope, inScope, isWholeNode } from '../../../src/services/watch/watch-scope.js';
import { parseSelector } from '../../../src/lib/selector.js';
import { FakeSession, pod } from '../../tui/support/fake-session.js';

const feeds: WatchFeed[] = [];
afterEach(() => {
  for (const f of feeds.splice(0)) f.close();
});

const labelled = (name: string, labels: Record<string, string>) => {
  const p = pod(name);
  return { ...p, pod: { ...p.pod, metadata: { ...p.pod!.metadata, labels } } };
};

describe('watch scope', () => {
  it('keeps the pods of the namespace and selector, the same object until the feed changes', async () => {
    const web = labelled('web/api', { app: 'api' });
    const webDb = labelled('web/db', { app: 'db' });
    const sys = labelled('kube-system/dns', { app: 'api' });
    const session = new FakeSession([web, webDb, sys]);
    const feed = new WatchFeed(session, { coalesceMs: 1 });
    feeds.push(feed);
    await feed.start();
    const ns = new ScopedFeed(feed, { namespace: 'web' });
    expect(ns.snapshot().pods.map((p) => p.name)).toEqual(['api', 'db']);
    expect(ns.snapshot()).toBe(ns.snapshot());
    const both = new ScopedFeed(feed, { namespace: 'web', selector: parseSelector('app=api') });
    expect(both.snapshot().pods.map((p) => p.name)).toEqual(['api']);
    const everywhere = new ScopedFeed(feed, { selector: parseSelector('app=api') });
    expect(everywhere.snapshot().pods.map((p) => `${p.namespace}/${p.name}`)).toEqual(['web/api', 'kube-system/dns']);

    const changes: FeedChange[] = [];
    ns.onChange((c) => changes.push(c));
    const before = ns.snapshot();
    session.set({ ...sys, state: 'terminating', since: 5_000 });
    session.set({ ...webDb, state: 'terminating', since: 5_000 });
    session.emit({ source: 'store', uid: sys.uid, at: 5_000, kind: 'request-written' });
    session.emit({ source: 'session', at: 5_000, kind: 'warning', message: 'relist slow' });
    await feed.refresh();
    expect(ns.snapshot()).not.toBe(before);
    const transitions = changes.flatMap((c) => c.transitions).map((t) => `${t.namespace}/${t.name} ${t.to}`);
    expect(transitions).toEqual(['web/db terminating']);
    const entries = changes.flatMap((c) => c.entries).map((e) => e.kind);
    expect(entries).toContain('warning');
    expect(entries).not.toContain('request-written');
    expect(ns.snapshot().entries.some((e) => e.uid === sys.uid)).toBe(false);
  });

  it('says what it shows; no namespace and no selector is the whole node', () => {
    expect(isWholeNode(undefined)).toBe(true);
    expect(isWholeNode({})).toBe(true);
    expect(isWholeNode({ namespace: 'web' })).toBe(false);
    expect(describeScope({ namespace: 'kube-system', selector: parseSelector('tier=control-plane') })).toBe('namespace kube-system · -l tier=control-plane');
    expect(describeScope({})).toBeUndefined();
    expect(inScope(pod('web/a'), { selector: parseSelector('!app') })).toBe(true);
  });
});
