/**
 * Field selectors (`--field-selector`) as kubectl accepts them for pods, over what podctl knows of a
 * pod on this node: `field=value`, `field==value`, `field!=value`, comma-separated (all must hold).
 *
 * Fields:
 * - `metadata.name`, `metadata.namespace`, `metadata.uid`;
 * - `status.phase`: the pod's Kubernetes phase as the runtime shows it (see `podPhase`);
 * - `state`: podctl's own state of the pod, the word of status's STATE column and of every JSON
 *   `state` (sync, terminating, terminated, finished, runtime).
 *
 * Invariant: parsing is strict — an unknown field, or a value a field can never take (a phase or
 * state that does not exist), is a UsageError naming --field-selector: `status.phase!=Runing` would
 * otherwise select every pod.
 */
import type { PodInfo } from '../domain/session-api.js';
import { UsageError } from './errors.js';

const POD_PHASES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown'] as const;
export type PodPhase = (typeof POD_PHASES)[number];

const POD_STATES = ['sync', 'terminating', 'terminated', 'finished', 'runtime'] as const;

const FIELDS = ['metadata.name', 'metadata.namespace', 'metadata.uid', 'status.phase', 'state'] as const;
type FieldName = (typeof FIELDS)[number];

export interface FieldRequirement {
  field: FieldName;
  op: 'eq' | 'ne';
  value: string;
}

const FLAG = '--field-selector';

export function parseFieldSelector(text: string): FieldRequirement[] {
  if (text.trim() === '') throw new UsageError(`${FLAG} is empty`, 'use e.g. --field-selector status.phase=Running,metadata.name!=web-1');
  return text.split(',').map((raw) => parseTerm(raw.trim(), text));
}

function parseTerm(term: string, whole: string): FieldRequirement {
  const match = /^([a-zA-Z.]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
  if (!match) throw new UsageError(`${FLAG}: cannot parse "${term}" in "${whole}"`, 'use field=value, field==value or field!=value');
  const [, field = '', operator, value = ''] = match;
  if (!(FIELDS as readonly string[]).includes(field)) {
    throw new UsageError(`${FLAG}: "${field}" is not a field podctl knows`, `use ${FIELDS.join(', ')}`);
  }
  const known = field === 'status.phase' ? POD_PHASES : field === 'state' ? POD_STATES : undefined;
  if (known && !(known as readonly string[]).includes(value)) {
    throw new UsageError(`${FLAG}: ${field} is never "${value}"`, `it is one of ${known.join(', ')}`);
  }
  return { field: field as FieldName, op: operator === '!=' ? 'ne' : 'eq', value };
}

/**
 * The pod's phase as the kubelet would report it from what the runtime shows: Running while a
 * container runs; Failed when a container exited with another code than 0, or the pod was
 * evicted; Succeeded when every container exited 0; otherwise Pending while the pod is not over
 * (desired, containers not started yet) and Unknown once it is (the runtime no longer has its
 * containers, or did not give their exit codes).
 */
export function podPhase(pod: PodInfo): PodPhase {
  if (pod.containersRunning > 0) return 'Running';
  if (pod.worker?.evicted === true) return 'Failed';
  const containers = pod.runtime?.containerStatuses ?? [];
  const exited = containers.filter((c) => c.state === 'exited');
  if (exited.some((c) => c.exitCode !== undefined && c.exitCode !== 0)) return 'Failed';
  if (exited.length > 0 && exited.length === containers.length && exited.every((c) => c.exitCode === 0)) return 'Succeeded';
  // nothing ran to its end yet, or an exit code the runtime did not give
  return pod.state === 'terminated' || pod.state === 'finished' ? 'Unknown' : 'Pending';
}

function fieldValue(pod: PodInfo, field: FieldName): string {
  switch (field) {
    case 'metadata.name':
      return pod.name;
    case 'metadata.namespace':
      return pod.namespace;
    case 'metadata.uid':
      return pod.uid;
    case 'status.phase':
      return podPhase(pod);
    case 'state':
      return pod.state;
  }
}

export function matchesFields(pod: PodInfo, requirements: readonly FieldRequirement[]): boolean {
  return requirements.every((r) => (fieldValue(pod, r.field) === r.value) === (r.op === 'eq'));
}

export function formatFieldSelector(requirements: readonly FieldRequirement[]): string {
  return requirements.map((r) => `${r.field}${r.op === 'eq' ? '=' : '!='}${r.value}`).join(',');
}
