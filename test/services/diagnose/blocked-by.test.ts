import { describe, expect, it } from 'vitest';
import { BLOCKED_KINDS, blockedBy, networkPluginOf, parseRuntimeError, type StuckFacts } from '../../../src/services/diagnose/blocked-by.js';
import { mountPointsOf, mountsUnder, pidOfInfo, procStateOf } from '../../../src/services/diagnose/stuck-facts.js';

function facts(over: Partial<StuckFacts> = {}): StuckFacts {
  return {
    namespace: 'web',
    name: 'api',
    state: 'terminating',
    apiDeleting: false,
    finalizers: [],
    driven: true,
    kubeletRunning: false,
    gracePeriodSeconds: 30,
    graceLeftMs: 12_000,
    containersRunning: 1,
    lastError: null,
    processes: [],
    mountsHeld: [],
    podDir: '/var/lib/kubelet/pods/u1',
    ...over,
  };
}

describe('blockedBy: one named cause and one next step', () => {
  it('a pod that is not leaving, or finished with nothing holding it, has no cause', () => {
    expect(blockedBy(facts({ state: 'sync', driven: null }))).toBeNull();
    expect(blockedBy(facts({ state: 'runtime', driven: null }))).toBeNull();
    expect(blockedBy(facts({ state: 'finished', driven: null, containersRunning: 0 }))).toBeNull();
  });

  it('grace: within its grace, with the time left and how to shorten it', () => {
    const b = blockedBy(facts())!;
    expect(b.kind).toBe('grace');
    expect(b.detail).toContain('12s left of 30s');
    expect(b.next).toBe('wait, or shorten it: podctl kill web/api --grace 0');
  });

  it('cni-teardown: StopPodSandbox failed in the network plugin, the plugin named', () => {
    const b = blockedBy(facts({ lastError: 'StopPodSandbox: Unknown: failed to destroy network for sandbox "abc": plugin type="calico" failed (delete): connection refused' }))!;
    expect(b.kind).toBe('cni-teardown');
    expect(b.detail).toContain('network plugin "calico"');
    expect(b.next).toContain('calico');
    // the same text from another call is not a network teardown
    expect(blockedBy(facts({ lastError: 'StopContainer: Unknown: plugin type="calico" failed' }))!.kind).toBe('runtime-error');
  });

  it('uninterruptible-io: a process in state D wins over the error it causes', () => {
    const b = blockedBy(facts({ lastError: 'StopContainer: DeadlineExceeded: ', processes: [{ container: 'db', containerId: 'c1', pid: 4242, state: 'D' }] }))!;
    expect(b.kind).toBe('uninterruptible-io');
    expect(b.detail).toContain('SIGKILL cannot help until the I/O returns');
    expect(b.next).toContain('/proc/4242/stack');
  });

  it('stale-shim: the runtime says running, the process is gone', () => {
    const b = blockedBy(facts({ processes: [{ container: 'app', containerId: '0123456789abcdef', pid: 77, state: 'gone' }] }))!;
    expect(b.kind).toBe('stale-shim');
    expect(b.detail).toContain('pid 77');
    expect(b.next).toContain('ctr -n k8s.io tasks delete --force 0123456789abcdef)');
    const fromError = blockedBy(facts({ lastError: 'StopContainer: Unknown: failed to stop container "x": ttrpc: closed: unknown' }))!;
    expect(fromError.kind).toBe('stale-shim');
    // no ID to name: no command with a made-up one
    expect(fromError.next).toContain('ctr -n k8s.io tasks ls');
    expect(fromError.next).not.toMatch(/--force [A-Z]+\)/);
  });

  it('runtime-deadline: CRI calls time out or the runtime is unreachable', () => {
    expect(blockedBy(facts({ lastError: 'StopContainer: DeadlineExceeded: Deadline exceeded' }))!.kind).toBe('runtime-deadline');
    expect(blockedBy(facts({ lastError: 'ListContainers: Unavailable: connect ENOENT' }))!.detail).toContain('could not reach the runtime');
  });

  it('volume-busy: a mount under the pod directory still held once the containers stopped, or an unmount error', () => {
    const b = blockedBy(facts({ state: 'terminated', containersRunning: 0, mountsHeld: ['/var/lib/kubelet/pods/u1/volumes/kubernetes.io~nfs/data'] }))!;
    expect(b.kind).toBe('volume-busy');
    expect(b.next).toContain('fuser -vm /var/lib/kubelet/pods/u1/volumes/kubernetes.io~nfs/data');
    expect(blockedBy(facts({ lastError: 'StopPodSandbox: Unknown: failed to unmount /run/x/shm: device or resource busy' }))!.kind).toBe('volume-busy');
  });

  it('finalizer: containers stopped, the API object waits for its finalizers', () => {
    const b = blockedBy(facts({ state: 'finished', driven: null, containersRunning: 0, apiDeleting: true, finalizers: ['example.com/backup'] }))!;
    expect(b.kind).toBe('finalizer');
    expect(b.detail).toContain('example.com/backup');
    // while containers still run, the finalizer is not what holds it
    expect(blockedBy(facts({ apiDeleting: true, finalizers: ['example.com/backup'] }))!.kind).toBe('grace');
  });

  it('kubelet-owns: a kubelet runs and no podctl process drives the pod', () => {
    const b = blockedBy(facts({ state: 'runtime', driven: null, apiDeleting: true, kubeletRunning: true }))!;
    expect(b.kind).toBe('kubelet-owns');
    expect(b.next).toContain('--via-api');
    // a pod podctl drives is podctl's, kubelet or not
    expect(blockedBy(facts({ kubeletRunning: true }))!.kind).toBe('grace');
  });

  it('undriven, runtime-error, and the grace that is over', () => {
    expect(blockedBy(facts({ driven: false }))!.next).toContain('podctl sync-known');
    expect(blockedBy(facts({ lastError: 'StopContainer: Unknown: permission denied' }))!.kind).toBe('runtime-error');
    expect(blockedBy(facts({ graceLeftMs: 0 }))!.detail).toContain('grace of 30s is over');
    // nothing left to kill: the sandbox stop is what runs, not a kill
    expect(blockedBy(facts({ graceLeftMs: 0, containersRunning: 0 }))!.detail).toBe(
      'every container stopped; what remains is the sandbox stop (StopPodSandbox: its network and mounts) and the final check',
    );
  });

  it('every kind has a distinct next step', () => {
    const samples: StuckFacts[] = [
      facts(),
      facts({ lastError: 'StopPodSandbox: Unknown: failed to destroy network for sandbox: plugin type="cilium" failed' }),
      facts({ processes: [{ container: 'a', containerId: 'c', pid: 1, state: 'D' }] }),
      facts({ processes: [{ container: 'a', containerId: 'c', pid: 1, state: 'gone' }] }),
      facts({ lastError: 'StopContainer: DeadlineExceeded: ' }),
      facts({ state: 'terminated', containersRunning: 0, mountsHeld: ['/m'] }),
      facts({ state: 'finished', driven: null, containersRunning: 0, apiDeleting: true, finalizers: ['f'] }),
      facts({ kubeletRunning: true, driven: false }),
      facts({ driven: false }),
      facts({ lastError: 'StopContainer: Unknown: nope' }),
    ];
    const results = samples.map((f) => blockedBy(f)!);
    expect(results.map((r) => r.kind).sort()).toEqual([...BLOCKED_KINDS].sort());
    expect(new Set(results.map((r) => r.next)).size).toBe(BLOCKED_KINDS.length);
  });
});

describe('parsing the facts', () => {
  it('splits a recorded runtime error and names the network plugin', () => {
    expect(parseRuntimeError('StopPodSandbox: Unknown: failed: x')).toEqual({ method: 'StopPodSandbox', code: 'Unknown', text: 'failed: x' });
    expect(parseRuntimeError('terminating: StopContainer: DeadlineExceeded: late')).toEqual({ method: 'StopContainer', code: 'DeadlineExceeded', text: 'late' });
    expect(parseRuntimeError('pod u1 still has 1 running container(s): a')).toEqual({ method: null, code: null, text: 'pod u1 still has 1 running container(s): a' });
    expect(networkPluginOf('plugin type="flannel" failed (delete)')).toBe('flannel');
    expect(networkPluginOf('something else')).toBeNull();
  });

  it('reads the state letter of /proc/<pid>/stat even when the command has spaces and parentheses', () => {
    expect(procStateOf('4242 (my (odd) cmd) D 1 4242 4242 0 -1')).toBe('D');
    expect(procStateOf('1 (init) S 0 1 1')).toBe('S');
    expect(procStateOf('')).toBe('gone');
  });

  it('finds mounts under the pod directory in mountinfo, octal escapes decoded', () => {
    const mountinfo = [
      '22 1 0:21 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~nfs/my\\040data rw - nfs srv:/x rw',
      '23 1 0:22 / /var/lib/kubelet/pods/u10/volumes/x rw - tmpfs tmpfs rw',
      '24 1 0:23 / /run rw - tmpfs tmpfs rw',
      '25 1 0:24 / /var/lib/kubelet/pods/u1 rw - tmpfs tmpfs rw',
      '',
    ].join('\n');
    const points = mountPointsOf(mountinfo);
    expect(points).toEqual(['/var/lib/kubelet/pods/u1/volumes/kubernetes.io~nfs/my data', '/var/lib/kubelet/pods/u10/volumes/x', '/run', '/var/lib/kubelet/pods/u1']);
    expect(mountsUnder(points, '/var/lib/kubelet/pods/u1')).toEqual(['/var/lib/kubelet/pods/u1/volumes/kubernetes.io~nfs/my data', '/var/lib/kubelet/pods/u1']);
    expect(mountsUnder(points, '/var/lib/kubelet/pods/u1/')).toEqual(['/var/lib/kubelet/pods/u1/volumes/kubernetes.io~nfs/my data']);
    expect(mountsUnder(points, '/var/lib/kubelet/pods/u2')).toEqual([]);
  });

  it('takes the pid from ContainerStatus verbose info', () => {
    expect(pidOfInfo({ info: JSON.stringify({ pid: 123, sandboxID: 'x' }) })).toEqual({ pid: 123 });
    expect(pidOfInfo({ info: JSON.stringify({ pid: 9, simProcessState: 'D' }) })).toEqual({ pid: 9, simState: 'D' });
    expect(pidOfInfo({ info: 'not json' })).toEqual({});
    expect(pidOfInfo(undefined)).toEqual({});
  });
});
