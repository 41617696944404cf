/** --field-selector: parsing (strict), matching, and the phase podctl infers from the runtime. */
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/lib/errors.js';
import { formatFieldSelector, matchesFields, parseFieldSelector, podPhase } from '../../src/lib/field-selector.js';
import { parseSelection, resolveSelection } from '../../src/lib/refs.js';
import type { PodInfo } from '../../src/domain/session-api.js';

type Container = NonNullable<PodInfo['runtime']>['containerStatuses'][number];

function pod(name: string, over: Partial<PodInfo> = {}, containers: Partial<Container>[] = []): PodInfo {
  const statuses = containers.map((c, i) => ({ id: `c${i}`, name: `c${i}`, state: 'running' as const, ...c }));
  return {
    uid: `uid-${name}`,
    namespace: 'web',
    name,
    static: false,
    state: 'sync',
    containersRunning: statuses.filter((c) => c.state === 'running').length,
    containersTotal: statuses.length,
    since: 0,
    history: [],
    runtime: { id: `sb-${name}`, name, namespace: 'web', containerStatuses: statuses, sandboxStatuses: [] },
    ...over,
  };
}

describe('parseFieldSelector', () => {
  it('reads =, == and !=, comma-separated', () => {
    expect(parseFieldSelector('metadata.name=web-1,status.phase!=Running,state==terminating')).toEqual([
      { field: 'metadata.name', op: 'eq', value: 'web-1' },
      { field: 'status.phase', op: 'ne', value: 'Running' },
      { field: 'state', op: 'eq', value: 'terminating' },
    ]);
    expect(formatFieldSelector(parseFieldSelector('metadata.namespace==kube-system'))).toBe('metadata.namespace=kube-system');
  });

  it('refuses unknown fields, impossible phases and states, and empty input, naming the flag', () => {
    expect(() => parseFieldSelector('spec.nodeName=node-1')).toThrow(/--field-selector: "spec.nodeName" is not a field podctl knows/);
    // a typo in a != term would otherwise select every pod
    expect(() => parseFieldSelector('status.phase!=Runing')).toThrow(/status.phase is never "Runing"/);
    expect(() => parseFieldSelector('state=running')).toThrow(/state is never "running"/);
    expect(() => parseFieldSelector('metadata.name')).toThrow(/cannot parse "metadata.name"/);
    expect(() => parseFieldSelector(' ')).toThrow(UsageError);
  });
});

describe('podPhase', () => {
  it('Running while a container runs, also while terminating', () => {
    expect(podPhase(pod('a', {}, [{ state: 'running' }, { state: 'exited', exitCode: 1 }]))).toBe('Running');
    expect(podPhase(pod('a', { state: 'terminating' }, [{ state: 'running' }]))).toBe('Running');
  });

  it('Succeeded when every container exited 0; Failed when one exited otherwise or the pod was evicted', () => {
    expect(
      podPhase(
        pod('a', { state: 'terminated' }, [
          { state: 'exited', exitCode: 0 },
          { state: 'exited', exitCode: 0 },
        ]),
      ),
    ).toBe('Succeeded');
    expect(
      podPhase(
        pod('a', { state: 'terminated' }, [
          { state: 'exited', exitCode: 0 },
          { state: 'exited', exitCode: 137 },
        ]),
      ),
    ).toBe('Failed');
    const evicted = pod('a', { state: 'finished', worker: { evicted: true } as PodInfo['worker'] });
    expect(podPhase(evicted)).toBe('Failed');
  });

  it('Pending before anything ran to its end; Unknown once over without exit codes', () => {
    expect(podPhase(pod('a', {}, [{ state: 'created' }]))).toBe('Pending');
    expect(podPhase(pod('a', { state: 'runtime' }))).toBe('Pending');
    expect(podPhase(pod('a', { state: 'finished' }))).toBe('Unknown');
    expect(podPhase(pod('a', { state: 'terminated' }, [{ state: 'exited' }]))).toBe('Unknown');
  });
});

describe('field selection', () => {
  const pods = [
    pod('web-1', {}, [{ state: 'running' }]),
    pod('web-2', { state: 'terminating' }, [{ state: 'exited', exitCode: 0 }]),
    pod('job-1', { state: 'terminated' }, [{ state: 'exited', exitCode: 2 }]),
    pod('dns', { namespace: 'kube-system' }, [{ state: 'running' }]),
  ];
  const names = (selection: Parameters<typeof resolveSelection>[1]): string[] => resolveSelection(pods, selection).targets.map((p) => `${p.namespace}/${p.name}`);

  it('matches each operator', () => {
    expect(matchesFields(pods[0]!, parseFieldSelector('metadata.name=web-1'))).toBe(true);
    expect(matchesFields(pods[0]!, parseFieldSelector('metadata.name!=web-1'))).toBe(false);
    expect(matchesFields(pods[2]!, parseFieldSelector('status.phase=Failed,state=terminated'))).toBe(true);
    expect(matchesFields(pods[2]!, parseFieldSelector('status.phase=Failed,state!=terminated'))).toBe(false);
  });

  it('selects within the namespace scope, with -l when both are given', () => {
    expect(names(parseSelection({ args: [], fieldSelector: 'status.phase=Running', allNamespaces: true }))).toEqual(['kube-system/dns', 'web/web-1']);
    expect(names(parseSelection({ args: [], fieldSelector: 'status.phase=Running', namespace: 'web' }))).toEqual(['web/web-1']);
    expect(names(parseSelection({ args: [], fieldSelector: 'state!=sync', namespace: 'web' }))).toEqual(['web/job-1', 'web/web-2']);
    expect(names(parseSelection({ args: [], fieldSelector: 'metadata.namespace=kube-system', allNamespaces: true }))).toEqual(['kube-system/dns']);
    // -l and --field-selector: both hold (no pod here has labels)
    expect(names(parseSelection({ args: [], fieldSelector: 'state=sync', selector: 'app', allNamespaces: true }))).toEqual([]);
  });

  it('is a selection of its own for destructive commands, and contradicts pod names and --all', () => {
    expect(parseSelection({ args: [], fieldSelector: 'state=terminating' }).fields).toHaveLength(1);
    expect(() => parseSelection({ args: ['web-1'], fieldSelector: 'state=sync' })).toThrow(/REF\/--uid cannot be combined with --field-selector/);
    expect(() => parseSelection({ args: [], all: true, fieldSelector: 'state=sync' })).toThrow(/--all cannot be combined with --field-selector/);
  });
});
