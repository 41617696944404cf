/**
 * `podctl agent`: parse and validate, run the agent service until SIGTERM/SIGINT. No logic of its own.
 */
import { access, readFile } from 'node:fs/promises';
import { Flags } from '@oclif/core';
import { detectKube } from '../kube/index.js';
import { apiNodeFor, kubeletFlags, kubeletStatusFor } from '../base/api-door.js';
import { PodctlCommand } from '../base/command.js';
import { RuntimeFailure, UsageError } from '../lib/errors.js';
import { nodeName } from '../base/flags.js';
import { ExitCode, exitCodesHelp } from '../lib/exit-codes.js';
import { parseDuration } from '../lib/duration.js';
import type { AgentResult, MetricsAddress } from '../services/housekeeping/agent.js';
import type { AgentSelf } from '../services/housekeeping/agent-self.js';
import type { ShutdownGuard } from '../services/shutdown/guard.js';
import type { ApiNode } from '../services/api/api-node.js';
import type { KubeletStatus } from '../kube/kubelet.js';
import type { NodeSession } from '../domain/session-api.js';
import type { DesiredSource } from '../services/housekeeping/sync-known.js';
import { MAX_GRACE_SECONDS } from '../engine/grace.js';
import { DEFAULT_CRITICAL_GRACE_SECONDS, DEFAULT_DRAIN_GRACE_SECONDS, defaultGroups, parseGroups, type PriorityGroup } from '../services/drain/drain-plan.js';

/** The agent's namespace (its drain lock's Leases): the service account's, else podctl-system. */
async function agentNamespace(): Promise<string> {
  const text = await readFile('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').catch(() => '');
  return text.trim() || 'podctl-system';
}

/** The shutdown guard's groups from the agent's flags; undefined without --shutdown-guard. */
function shutdownGroupsOf(flags: {
  'shutdown-guard': boolean;
  'shutdown-grace-period'?: number | undefined;
  'shutdown-critical-grace-period'?: number | undefined;
  'shutdown-group'?: string[] | undefined;
}): PriorityGroup[] | undefined {
  const budgets = flags['shutdown-grace-period'] !== undefined || flags['shutdown-critical-grace-period'] !== undefined;
  if (!flags['shutdown-guard']) {
    if (budgets || flags['shutdown-group']) throw new UsageError('the --shutdown-* budgets need --shutdown-guard', 'add --shutdown-guard, or leave them out');
    return undefined;
  }
  if (flags['shutdown-group'] && budgets)
    throw new UsageError('--shutdown-group cannot be combined with --shutdown-grace-period/--shutdown-critical-grace-period', 'give either priority groups or the two budgets');
  if (flags['shutdown-group']) return parseGroups(flags['shutdown-group']);
  const total = flags['shutdown-grace-period'] ?? DEFAULT_DRAIN_GRACE_SECONDS;
  const critical = flags['shutdown-critical-grace-period'] ?? DEFAULT_CRITICAL_GRACE_SECONDS;
  if (critical > total) throw new UsageError(`--shutdown-critical-grace-period (${critical}s) exceeds --shutdown-grace-period (${total}s)`, "the whole budget includes the critical pods' share");
  return defaultGroups(total, critical);
}

/** The agent's flags that settle how it runs (before the session opens). */
type AgentFlags = Parameters<typeof shutdownGroupsOf>[0] & {
  interval: string;
  'stuck-after': string;
  'metrics-addr': string;
  desired?: string | undefined;
  'desired-from'?: 'api' | 'runtime' | undefined;
  'shutdown-stop-timeout': string;
};

/** The agent's timings, listen address and shutdown groups, validated from its flags. */
interface AgentSettings {
  intervalMs: number;
  stuckAfterMs: number;
  listen: MetricsAddress | undefined;
  guardGroups: PriorityGroup[] | undefined;
  stopTimeoutMs: number;
}

/** Validates the agent's flags (a bad one is a usage error) into its settings. */
async function settingsOf(flags: AgentFlags): Promise<AgentSettings> {
  const intervalMs = parseDuration(flags.interval, 'interval');
  if (intervalMs < 100) throw new UsageError(`--interval ${flags.interval} is too short`, 'use 100ms or more (the kubelet uses 2s)');
  const stuckAfterMs = parseDuration(flags['stuck-after'], 'stuck-after');
  if (flags.desired !== undefined && flags['desired-from'] !== undefined) {
    throw new UsageError('--desired and --desired-from are mutually exclusive', 'give one source of desired pods');
  }
  const guardGroups = shutdownGroupsOf(flags);
  const stopTimeoutMs = parseDuration(flags['shutdown-stop-timeout'], 'shutdown-stop-timeout');
  const { parseMetricsAddr } = await import('../services/housekeeping/agent.js');
  const listen = flags['metrics-addr'] === 'none' ? undefined : parseMetricsAddr(flags['metrics-addr']);
  return { intervalMs, stuckAfterMs, listen, guardGroups, stopTimeoutMs };
}

/** Where desired pods come from: --desired (a file readable now), else --desired-from, else the API server when there is one. */
async function desiredSourceOf(flags: AgentFlags, haveKube: boolean): Promise<DesiredSource> {
  if (flags.desired !== undefined) {
    // only the operator can fix it: said at start, not at every step
    await access(flags.desired).catch((error: NodeJS.ErrnoException) => {
      throw new UsageError(`--desired ${flags.desired}: cannot read (${error.code ?? error.message})`, 'give a readable file of desired pods');
    });
    return { kind: 'file', path: flags.desired };
  }
  if (flags['desired-from'] === 'api' && !haveKube) throw new UsageError('--desired-from api needs an API server', 'pass --kubeconfig FILE or set KUBECONFIG');
  if (flags['desired-from'] === 'runtime' || !haveKube) return { kind: 'runtime' };
  return { kind: 'api' };
}

/** The desired source as the start line names it. */
function sourceName(source: DesiredSource): string {
  return source.kind === 'file' ? source.path : source.kind === 'api' ? 'the API server' : 'the runtime';
}

/** What the shutdown guard is started with beside the settings: the open session and its mark's release, the API door, this agent's own pod. */
interface GuardParts {
  session: NodeSession;
  stateDir: string;
  api: ApiNode | undefined;
  kubeletState: () => Promise<KubeletStatus>;
  self: AgentSelf;
  release: () => Promise<void>;
}

export default class Agent extends PodctlCommand {
  static override summary = "Run as the node's housekeeper: take over abandoned pods, finish orphans, serve Prometheus metrics.";
  static override description = `Runs until SIGTERM or SIGINT (then stops within 5 s, exit 0, state saved; pods it still drives are handed to a background podctl process, whose PID it prints).

One agent serves a state dir: a second one on the same --state-dir refuses to start (exit 1), naming the first one's PID.

Every --interval it runs the kubelet's housekeeping step, exactly what \`podctl sync-known\` does with the same safety rules (static pods kept, an empty desired list refused): pods whose podctl owner died or timed out are taken over, orphans are driven to termination, finished workers are forgotten. Desired pods come from the runtime by default, from the API server when one is configured (--kubeconfig, $KUBECONFIG, in-cluster) or --desired-from api, or from --desired FILE. Between steps it serves kills other podctl processes hand to it.

A pod terminating longer than its grace period plus --stuck-after is logged once, counted in podctl_stuck_pods (and an Event is posted when an API server is configured); \`podctl status\` marks it stuck too.

With an API server it lists its node's pods and its Node once, then follows them with watches (no request per step); a pod deleted in the API is acted on when the watch says so. While the API server does not answer, housekeeping goes on with the last known pods (takeovers, deletions, stuck pods), but no pod is terminated as an orphan until it answers again.

HTTP on --metrics-addr (default 127.0.0.1:9640, loopback only unless told): /metrics (Prometheus text format; every series in docs/metrics.md), /healthz (liveness: 200 while the loop makes progress, whatever its dependencies say) and /readyz (readiness: 503 after 3 failed steps in a row, while the runtime has not answered for max(3 × interval, 10 s), or while the API server refuses the credentials); both name the verdict on the first line (200 "degraded: …" while API writes are withheld), then the runtime, state dir, API server and kubelet, each with its state and since when. Nothing else is served.

A --desired file that cannot be read, or a state dir that cannot be created or opened, ends the agent at start with exit 2 and one line.

With an API server, a Node annotated podctl.io/drain=requested is drained by its agent beside housekeeping (docs/cluster.md); an agent that starts on a node left podctl.io/drain=draining resumes that drain, and one stopped mid-drain hands it on (an Event; the node stays draining). At most --max-draining-nodes nodes drain at once (a coordination.k8s.io Lease each in the agent's namespace); a request that waits says podctl.io/drain=queued and why. The agent's own pod is never a target: it knows it by $POD_UID (the DaemonSet sets it), else by the container ID in /proc/self/cgroup.

With an API server the agent sends no API write (eviction, delete, status patch, cordon, Event) until it has checked that its node restriction is in force: its token carries the node-name claim of --node (SelfSubjectReview) and the ValidatingAdmissionPolicy podctl-node-restriction and its binding (Deny) from deploy/ are there. Until then it says once why and how to fix it, podctl_api_writes_enabled is 0, /healthz and /readyz say degraded (200), maintenance requests wait, and housekeeping on the node goes on. The check is made again every 10 minutes while writes are enabled (the policy and its binding: 2 reads) and every 60 s while they are withheld. --unrestricted-api-writes sends writes regardless (said at start, podctl_api_writes_unrestricted 1).

${exitCodesHelp([ExitCode.Done, ExitCode.Failure, ExitCode.Usage])}`;

  static override examples = [
    { description: 'Run on the node with the defaults (runtime as desired source, metrics on 127.0.0.1:9640):', command: '<%= config.bin %> <%= command.id %>' },
    { description: 'Housekeeping every 5 s, metrics for a Prometheus on another host:', command: '<%= config.bin %> <%= command.id %> --interval 5s --metrics-addr 0.0.0.0:9640' },
    { description: 'Desired pods from the API server:', command: '<%= config.bin %> <%= command.id %> --kubeconfig /etc/kubernetes/kubelet.conf' },
  ];

  static override flags = {
    interval: Flags.string({ summary: "Time between housekeeping steps (the kubelet's is 2s).", default: '2s', helpValue: 'DURATION' }),
    'stuck-after': Flags.string({ summary: 'A pod terminating this long past its grace period counts as stuck.', default: '30s', helpValue: 'DURATION' }),
    'metrics-addr': Flags.string({ summary: 'Where /metrics and /healthz are served (HOST:PORT; port 0 picks one). "none" serves nothing.', default: '127.0.0.1:9640', helpValue: 'HOST:PORT' }),
    desired: Flags.string({ summary: 'File of desired pods (PodList, list or pod, JSON or YAML), read at every step.', helpValue: 'FILE' }),
    'unrestricted-api-writes': Flags.boolean({
      summary: 'Send API writes even when the node restriction (deploy/validating-admission-policy.yaml, a node-bound token) is not in force.',
      description: 'Without it the agent withholds every API write (evictions, deletes, status patches, cordon, Events) until its token is bound to --node and the policy is in force, and says why.',
      default: false,
    }),
    'desired-from': Flags.option({ summary: 'Where desired pods come from without --desired (default: api when an API server is configured, else runtime).', options: ['api', 'runtime'] as const })(),
    ...kubeletFlags,
    'max-draining-nodes': Flags.integer({
      summary: 'At most this many nodes of the cluster drain at once for podctl.io/drain requests (0: no lock); give every agent the same value.',
      description:
        "Each drain holds a coordination.k8s.io Lease podctl-drain-<i> (i < N) in the agent's namespace, renewed while it drains and released when it ends; a request that finds none free says podctl.io/drain=queued and why, and asks again every 5 s. The shipped Role names podctl-drain-0 to podctl-drain-4 (docs/cluster.md).",
      default: 1,
      min: 0,
      max: 5,
      helpValue: 'N',
    }),
    'shutdown-guard': Flags.boolean({
      summary: "Hold logind's delay lock on shutdown and, when the node shuts down, stop its pods in the shutdown priority groups first (docs/shutdown.md).",
      default: false,
    }),
    'shutdown-grace-period': Flags.integer({
      summary: `With --shutdown-guard: the whole shutdown budget in seconds, critical pods' share included (the kubelet's shutdownGracePeriod; default ${DEFAULT_DRAIN_GRACE_SECONDS}).`,
      min: 0,
      max: MAX_GRACE_SECONDS,
      helpValue: 'SECONDS',
    }),
    'shutdown-critical-grace-period': Flags.integer({
      summary: `With --shutdown-guard: the critical pods' share (shutdownGracePeriodCriticalPods; default ${DEFAULT_CRITICAL_GRACE_SECONDS}).`,
      min: 0,
      max: MAX_GRACE_SECONDS,
      helpValue: 'SECONDS',
    }),
    'shutdown-group': Flags.string({
      summary: "With --shutdown-guard: a priority group PRIORITY:SECONDS (repeatable; the kubelet's shutdownGracePeriodByPodPriority); replaces the two budgets.",
      multiple: true,
      helpValue: 'PRIORITY:SECONDS',
    }),
    'shutdown-stop-timeout': Flags.string({
      summary:
        "With --shutdown-guard: how long a drain may take when the agent is stopped (SIGTERM) during a shutdown logind did not announce, or while it defers to the kubelet's graceful shutdown (it then hands on); keep it under the unit's TimeoutStopSec.",
      default: '80s',
      helpValue: 'DURATION',
    }),
  };

  protected override interruptMessage = 'stopping the agent';
  protected override interruptIsNormal = true;

  async run(): Promise<AgentResult> {
    const { flags } = await this.parse(Agent);
    this.configure(flags);
    const settings = await settingsOf(flags);
    const { runAgent } = await import('../services/housekeeping/agent.js');
    const { agentSelf } = await import('../services/housekeeping/agent-self.js');
    const self = await agentSelf();
    const kube = detectKube(flags.kubeconfig);
    const source = await desiredSourceOf(flags, kube !== undefined);
    const api = kube ? await apiNodeFor(flags, this.reporter) : undefined;
    const { createMetrics } = await import('../metrics/registry.js');
    const metrics = createMetrics({ processDefaults: true });
    const session = await this.#agentSession(settings.guardGroups !== undefined);
    const kubeletState = async () => kubeletStatusFor(flags['kubelet-healthz'], api);
    const guard = await this.#startGuard(settings, { session: session.session, stateDir: flags['state-dir'], api, kubeletState, self, release: session.release });
    const shutdown = await import('../services/shutdown/index.js');
    await shutdown.exportShutdownMetrics(metrics, flags['state-dir'], guard?.facts);
    try {
      const result = await runAgent({
        session: session.session,
        source,
        ...(api ? { api } : {}),
        intervalMs: settings.intervalMs,
        stuckAfterMs: settings.stuckAfterMs,
        ...(settings.listen ? { listen: settings.listen } : {}),
        metrics,
        kubeletState,
        kubeletRoot: flags['kubelet-root'],
        node: nodeName(flags.node),
        unrestrictedApiWrites: flags['unrestricted-api-writes'],
        ...(api ? { drainLock: { namespace: await agentNamespace(), slots: flags['max-draining-nodes'] } } : {}),
        ...(self.podUid ? { selfPodUid: self.podUid } : {}),
        ...(self.containerId ? { selfContainerId: self.containerId } : {}),
        reporter: this.reporter,
        signal: this.abort.signal,
        onListening: (a) =>
          this.reporter.info(
            `agent: serving /metrics and /healthz on http://${a.host.includes(':') ? `[${a.host}]` : a.host}:${a.port}; housekeeping every ${flags.interval} from ${sourceName(source)}`,
          ),
      });
      this.reporter.info(`agent: stopped after ${result.steps} step(s) (${result.failedSteps} failed); took over ${result.resumed}, orphaned runtime pods ${result.orphanedRuntimePods}`);
      return result;
    } finally {
      await guard?.stop();
      api?.close();
      await session.release();
    }
  }

  /**
   * The node session with this agent's mark on its state dir (one agent per state dir: a second one
   * would take the same pods over and fight for them); a state dir that cannot be opened is a usage error.
   */
  async #agentSession(guarded: boolean): Promise<{ session: NodeSession; release: () => Promise<void> }> {
    const session = await this.session().catch((error: Error) => {
      // a state dir that cannot be created or opened: only the operator can fix it
      if (error instanceof RuntimeFailure && error.kind === 'StoreError') throw new UsageError(error.message, error.hint);
      if (error.name === 'StoreError') throw new UsageError(error.message);
      throw error;
    });
    const { claimAgentMark } = await import('../store/agent-mark.js');
    const claim = await claimAgentMark(session.stateDir);
    if (!claim.claimed) {
      const oneForm = guarded ? " (a node runs one shutdown guard: the podctl DaemonSet's agent or the podctl-shutdown-guard unit, not both)" : '';
      throw new Error(`another podctl agent (pid ${claim.holder.pid}) serves state dir ${session.stateDir}; stop it first, or give this one another --state-dir${oneForm}`);
    }
    return { session, release: () => claim.release() };
  }

  /** The shutdown guard with --shutdown-guard (else undefined); one that cannot start closes the API door, releases the mark and is a usage error. */
  async #startGuard(settings: AgentSettings, parts: GuardParts): Promise<ShutdownGuard | undefined> {
    if (settings.guardGroups === undefined) return undefined;
    const { api, self } = parts;
    const { isSelfPod } = await import('../services/housekeeping/agent-self.js');
    const isSelf = isSelfPod(self);
    const shutdown = await import('../services/shutdown/index.js');
    return shutdown
      .startShutdownGuard({
        session: parts.session,
        stateDir: parts.stateDir,
        groups: settings.guardGroups,
        stopTimeoutMs: settings.stopTimeoutMs,
        ...(api ? { api } : {}),
        kubeletState: parts.kubeletState,
        ...(isSelf ? { isSelf } : {}),
        reporter: this.reporter,
      })
      .catch(async (error: Error) => {
        api?.close();
        await parts.release();
        throw new UsageError(`--shutdown-guard: ${error.message}`, 'see docs/shutdown.md for what the guard needs (systemd-logind on the system D-Bus, systemd-inhibit)');
      });
  }
}
