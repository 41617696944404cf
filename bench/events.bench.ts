/**
 * Container events benchmark: what reading one CRI container event costs a follower of the node.
 *
 *   npm run bench:events      (node --import ./bench/register.mjs bench/events.bench.ts)
 *
 * The events are encoded by the generated CRI encoder as containerd sends them during a drain: a
 * container's `stopped` event with the pod's whole sandbox status (metadata, network, the kubelet's
 * labels and annotations) and its container's status (~1.1 KB each, the size a 500-pod drain of
 * `podctl simulator` sends). Two readers side by side, each in a fresh process (the code as cold as
 * a watch's is when a drain starts):
 * - the summary reader a follower uses (src/cri/client/container-event.ts);
 * - the generated decoder of the whole message (what a reader that builds every field pays).
 * Figures: µs per event over the first 1,137 events (a 500-pod drain's number) and over 20,000 more
 * (warm), and bytes allocated per event over the first 1,137 (heap growth in a child with a 64 MB young
 * generation from the start, so that no collection runs in between; what is kept of each event
 * included). Timings on a shared machine spread by ±30 %; the bytes do not.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ContainerEventResponse } from '../src/cri/client/generated/runtime_v1.js';
import { decodeContainerEventSummary } from '../src/cri/client/container-event.js';

const DRAIN_EVENTS = 1_137;
const WARM_EVENTS = 20_000;

function eventOf(i: number): Uint8Array {
  const uid = `0f9d1f0e-1111-2222-3333-${String(i).padStart(12, '0')}`;
  const id = (n: number) => `${n.toString(16).padStart(8, '0')}${'a'.repeat(56)}`;
  return ContainerEventResponse.encode(
    ContainerEventResponse.fromPartial({
      containerId: id(i * 2),
      containerEventType: 2,
      createdAt: 1_764_126_000_000_000_000n + BigInt(i),
      podSandboxStatus: {
        id: id(i * 2 + 1),
        metadata: { name: `worker-${i}`, uid, namespace: 'default', attempt: 0 },
        state: 1,
        createdAt: 1_764_126_000_000_000_000n,
        network: { ip: `10.0.${(i >> 8) & 255}.${i & 255}` },
        labels: { app: 'worker', 'io.kubernetes.pod.name': `worker-${i}`, 'io.kubernetes.pod.namespace': 'default', 'io.kubernetes.pod.uid': uid },
        annotations: { 'kubernetes.io/config.source': 'api', 'kubernetes.io/config.seen': '2026-11-27T03:00:00Z', 'io.kubernetes.pod.terminationGracePeriod': '30' },
        runtimeHandler: 'runc',
      },
      containersStatuses: [
        {
          id: id(i * 2),
          metadata: { name: 'worker', attempt: 0 },
          state: 2,
          createdAt: 1_764_126_000_000_000_000n,
          startedAt: 1_764_126_001_000_000_000n,
          finishedAt: 1_764_126_009_000_000_000n,
          exitCode: 143,
          image: { image: 'registry.local/worker:1' },
          imageRef: `sha256:${'b'.repeat(64)}`,
          reason: 'Error',
          labels: { 'io.kubernetes.container.name': 'worker', 'io.kubernetes.pod.uid': uid },
          annotations: { 'io.kubernetes.container.hash': 'abc123', 'io.kubernetes.container.restartCount': '0' },
          logPath: `/var/log/pods/default_worker-${i}_${uid}/worker/0.log`,
        },
      ],
    }),
  ).finish();
}

type Reader = 'summary' | 'generated';

function measure(reader: Reader): { coldUs: number; warmUs: number; bytesPerEvent: number; size: number } {
  const read = reader === 'summary' ? decodeContainerEventSummary : (bytes: Uint8Array) => ContainerEventResponse.decode(bytes);
  const events = Array.from({ length: DRAIN_EVENTS + WARM_EVENTS }, (_, i) => eventOf(i));
  const size = events.slice(0, DRAIN_EVENTS).reduce((n, e) => n + e.length, 0) / DRAIN_EVENTS;
  const kept: unknown[] = new Array(DRAIN_EVENTS);
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const coldStart = process.hrtime.bigint();
  for (let i = 0; i < DRAIN_EVENTS; i += 1) kept[i] = read(events[i]!);
  const coldNs = Number(process.hrtime.bigint() - coldStart);
  const bytes = process.memoryUsage().heapUsed - heapBefore;
  let sink = 0;
  const warmStart = process.hrtime.bigint();
  for (let i = DRAIN_EVENTS; i < events.length; i += 1) sink += read(events[i]!) === undefined ? 1 : 0;
  const warmNs = Number(process.hrtime.bigint() - warmStart);
  if (sink !== 0 || kept.length !== DRAIN_EVENTS) throw new Error('unreachable');
  // what was kept is counted: a follower keeps the summary of every event until it applied it
  return { coldUs: coldNs / DRAIN_EVENTS / 1000, warmUs: warmNs / WARM_EVENTS / 1000, bytesPerEvent: bytes / DRAIN_EVENTS, size };
}

const child = process.argv.indexOf('--reader');
if (child >= 0) {
  process.stdout.write(JSON.stringify(measure(process.argv[child + 1] as Reader)));
} else {
  const self = fileURLToPath(import.meta.url);
  const rows: string[] = [];
  rows.push('| reader                            | event bytes | µs/event, first 1,137 | µs/event, warm | bytes allocated/event |');
  rows.push('|-----------------------------------|-------------|-----------------------|----------------|-----------------------|');
  for (const reader of ['summary', 'generated'] as const) {
    const out = execFileSync(process.execPath, ['--expose-gc', '--min-semi-space-size=64', '--max-semi-space-size=64', '--import', './bench/register.mjs', self, '--reader', reader], {
      encoding: 'utf8',
    });
    const r = JSON.parse(out) as ReturnType<typeof measure>;
    const name = reader === 'summary' ? 'summary (container-event.ts)' : 'generated decoder (whole message)';
    rows.push(`| ${name.padEnd(33)} | ${r.size.toFixed(0).padStart(11)} | ${r.coldUs.toFixed(1).padStart(21)} | ${r.warmUs.toFixed(2).padStart(14)} | ${r.bytesPerEvent.toFixed(0).padStart(21)} |`);
  }
  console.log(`container events (Node.js ${process.versions.node}; each reader in a fresh process)`);
  console.log(rows.join('\n'));
}
