/**
 * Label selectors (`-l`), the equality-based subset kubectl accepts: `k=v`, `k==v`, `k!=v`, `k`
 * (exists), `!k` (does not exist), comma-separated (all must hold).
 *
 * Invariant: parsing is strict — an unparseable selector is a UsageError naming `-l`.
 */
import { UsageError } from './errors.js';

export type LabelRequirement =
  | { key: string; op: 'eq' | 'ne'; value: string }
  | { key: string; op: 'exists' | 'not-exists' };

const KEY = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$/;
const VALUE = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?)?$/;

export function parseSelector(text: string, flag = 'selector'): LabelRequirement[] {
  const requirements: LabelRequirement[] = [];
  for (const raw of text.split(',')) {
    const term = raw.trim();
    if (term === '') throw new UsageError(`--${flag}: empty term in "${text}"`, 'use e.g. -l app=web,tier!=db');
    requirements.push(parseTerm(term, text, flag));
  }
  return requirements;
}

function parseTerm(term: string, whole: string, flag: string): LabelRequirement {
  const bad = (): never => {
    throw new UsageError(`--${flag}: cannot parse "${term}" in "${whole}"`, 'use key=value, key!=value, key or !key');
  };
  if (term.startsWith('!')) {
    const key = term.slice(1).trim();
    if (!KEY.test(key)) bad();
    return { key, op: 'not-exists' };
  }
  const match = /^([^=!]+?)\s*(==|=|!=)\s*(.*)$/.exec(term);
  if (!match) {
    if (!KEY.test(term)) bad();
    return { key: term, op: 'exists' };
  }
  const [, key = '', operator, value = ''] = match;
  if (!KEY.test(key) || !VALUE.test(value)) bad();
  return { key, op: operator === '!=' ? 'ne' : 'eq', value };
}

export function matchesSelector(labels: Record<string, string> | undefined, requirements: LabelRequirement[]): boolean {
  const set = labels ?? {};
  return requirements.every((r) => {
    const has = Object.hasOwn(set, r.key);
    switch (r.op) {
      case 'exists':
        return has;
      case 'not-exists':
        return !has;
      case 'eq':
        return has && set[r.key] === r.value;
      case 'ne':
        return !has || set[r.key] !== r.value;
    }
  });
}

export function formatSelector(requirements: LabelRequirement[]): string {
  return requirements
    .map((r) => (r.op === 'eq' ? `${r.key}=${r.value}` : r.op === 'ne' ? `${r.key}!=${r.value}` : r.op === 'exists' ? r.key : `!${r.key}`))
    .join(',');
}
