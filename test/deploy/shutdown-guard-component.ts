/**
 * deploy/optional/shutdown-guard, the kustomize component that puts the shutdown guard in the
 * podctl DaemonSet, applied here as kustomize applies it (its JSON 6902 patch on deploy/'s
 * DaemonSet), so tests read what an operator's `kubectl apply -k` would run, without kubectl.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';

type Obj = Record<string, any>;

const DEPLOY = path.join(import.meta.dirname, '..', '..', 'deploy');
const COMPONENT = path.join(DEPLOY, 'optional', 'shutdown-guard');

interface PatchOp {
  op: string;
  path: string;
  value: unknown;
}

/** The component's patch operations (only `add` is used; anything else fails here). */
function componentPatch(): PatchOp[] {
  const kustomization = parse(readFileSync(path.join(COMPONENT, 'kustomization.yaml'), 'utf8')) as Obj;
  if (kustomization.kind !== 'Component') throw new Error(`${COMPONENT}: not a kustomize Component`);
  const [entry] = kustomization.patches as { path: string; target: Obj }[];
  return parse(readFileSync(path.join(COMPONENT, entry!.path), 'utf8')) as PatchOp[];
}

/** deploy/'s DaemonSet with the component applied (JSON pointer `add`, `-` appends). */
export function guardDaemonSet(): Obj {
  const base = parseAllDocuments(readFileSync(path.join(DEPLOY, 'daemonset.yaml'), 'utf8'))[0]!.toJSON() as Obj;
  for (const op of componentPatch()) {
    if (op.op !== 'add') throw new Error(`unexpected patch op ${op.op}`);
    const keys = op.path.split('/').slice(1);
    const last = keys.pop()!;
    let at: any = base;
    for (const key of keys) at = at[key];
    if (at === undefined) throw new Error(`patch path ${op.path} does not exist in the DaemonSet`);
    if (Array.isArray(at) && last === '-') at.push(op.value);
    else at[last] = op.value;
  }
  return base;
}
