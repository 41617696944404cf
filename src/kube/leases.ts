/**
 * Leases of `coordination.k8s.io/v1` in one namespace, as a lock is built on them (client-go's
 * leaderelection LeaseLock): read by name, created (409: another was first), replaced at the
 * resourceVersion read (409: it changed since). No retry of a conflict here: the caller reads again
 * and decides.
 */
import type { RbacNeed } from './errors.js';
import { isConflict, isNotFound } from './errors.js';
import type { KubeRequest } from './transport.js';

/** The fields of a Lease a lock reads and writes. */
export interface LeaseRecord {
  name: string;
  resourceVersion?: string;
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface LeaseStore {
  readonly namespace: string;
  get(name: string, signal?: AbortSignal): Promise<LeaseRecord | undefined>;
  /** 'taken': a Lease of that name exists already (another holder was first). */
  create(lease: LeaseRecord, signal?: AbortSignal): Promise<LeaseRecord | 'taken'>;
  /** Replaces the Lease read at `lease.resourceVersion`; 'conflict' when it changed since. */
  update(lease: LeaseRecord, signal?: AbortSignal): Promise<LeaseRecord | 'conflict'>;
}

type Call = (name: string, need: RbacNeed, request: KubeRequest, signal?: AbortSignal) => Promise<unknown>;

interface V1LeaseLike {
  metadata?: { name?: string; resourceVersion?: string };
  spec?: Omit<LeaseRecord, 'name' | 'resourceVersion'>;
}

const recordOf = (lease: V1LeaseLike): LeaseRecord => ({
  name: lease.metadata?.name ?? '',
  ...(lease.metadata?.resourceVersion ? { resourceVersion: lease.metadata.resourceVersion } : {}),
  ...lease.spec,
});

function bodyOf(namespace: string, lease: LeaseRecord): V1LeaseLike & { apiVersion: string; kind: string } {
  const { name, resourceVersion, ...spec } = lease;
  return { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, ...(resourceVersion ? { resourceVersion } : {}), namespace } as V1LeaseLike['metadata'], spec };
}

export function leaseStore(call: Call, namespace: string): LeaseStore {
  const base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  const need = (verb: string): RbacNeed => ({ verb, resource: 'leases', group: 'coordination.k8s.io', namespace });
  return {
    namespace,
    async get(name, signal) {
      try {
        return recordOf((await call('get lease', need('get'), { method: 'GET', path: `${base}/${encodeURIComponent(name)}` }, signal)) as V1LeaseLike);
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    async create(lease, signal) {
      try {
        return recordOf((await call('create lease', need('create'), { method: 'POST', path: base, body: bodyOf(namespace, lease) }, signal)) as V1LeaseLike);
      } catch (error) {
        if (isConflict(error)) return 'taken';
        throw error;
      }
    },
    async update(lease, signal) {
      try {
        return recordOf((await call('update lease', need('update'), { method: 'PUT', path: `${base}/${encodeURIComponent(lease.name)}`, body: bodyOf(namespace, lease) }, signal)) as V1LeaseLike);
      } catch (error) {
        if (isConflict(error)) return 'conflict';
        throw error;
      }
    },
  };
}
