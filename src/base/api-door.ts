/**
 * How a command reaches the API server and the kubelet check: the global flags turned into the
 * API side (services/api/api-node.ts), loaded only when called, so commands that need no API server
 * never load @kubernetes/client-node.
 */
import { Flags } from '@oclif/core';
import type { ApiNode } from '../services/api/api-node.js';
import type { KubeletStatus } from '../kube/kubelet.js';
import { RuntimeFailure } from '../lib/errors.js';
import { nodeName, type GlobalFlags } from './flags.js';
import type { Reporter } from '../lib/reporter.js';

/** The API side for these flags; undefined when no API server is configured. */
export async function apiNodeFor(flags: GlobalFlags, reporter: Reporter): Promise<ApiNode | undefined> {
  const { openApiNode } = await import('../services/api/api-node.js');
  try {
    return await openApiNode({ kubeconfig: flags.kubeconfig, node: nodeName(flags.node), stateDir: flags['state-dir'], reporter });
  } catch (error) {
    throw new RuntimeFailure((error as Error).message, 'fix --kubeconfig, or unset KUBECONFIG to work from the runtime alone', { kind: 'ApiServerError' });
  }
}

/** The kubelet check (kube/kubelet.ts), with the node Lease as fallback when an API server is configured. */
export async function kubeletStatusFor(healthz: string | undefined, api: ApiNode | undefined): Promise<KubeletStatus> {
  const { detectKubelet } = await import('../kube/kubelet.js');
  return detectKubelet({ ...(healthz ? { healthz } : {}), ...(api ? { leaseRenewedAt: async () => api.kube.nodeLeaseRenewedAt((await import('../lib/abortable.js')).boundSignal(3_000)) } : {}) });
}

/** The flag naming the kubelet's healthz (kill, status). */
export const kubeletFlags = {
  'kubelet-healthz': Flags.string({
    summary: "The kubelet's healthz endpoint, to tell whether a kubelet runs beside podctl (default 127.0.0.1:10248/healthz).",
    env: 'PODCTL_KUBELET_HEALTHZ',
    helpValue: 'URL',
  }),
  'kubelet-root': Flags.string({
    summary: "The kubelet's root directory (its --root-dir): a pod's final delete waits while a volume is mounted under <root>/pods/<uid>/volumes, and mounts held there name a stuck pod's cause.",
    env: 'PODCTL_KUBELET_DIR',
    default: '/var/lib/kubelet',
    helpValue: 'DIR',
  }),
};
