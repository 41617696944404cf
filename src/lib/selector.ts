/**
 * Label selectors (`-l`) as kubectl accepts them: equality-based `k=v`, `k==v`, `k!=v`, `k`
 * (exists), `!k` (does not exist), and set-based `k in (a,b)`, `k notin (a,b)`; comma-separated
 * outside the parentheses (all must hold).
 *
 * Invariant: parsing is strict — an unparseable selector is a UsageError naming `-l`.
 */
import { UsageError } from './errors.js';

export type LabelRequirement = { key: string; op: 'eq' | 'ne'; value: string } | { key: string; op: 'in' | 'notin'; values: string[] } | { key: string; op: 'exists' | 'not-exists' };

/** Splits on the commas outside parentheses: `app in (a,b),tier` → ["app in (a,b)", "tier"]. */
function splitTerms(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth += 1;
    if (ch === ')') depth -= 1;
    if (ch === ',' && depth === 0) {
      out.push(current);
      current = '';
      continue;
    }
    current += ch;
  }
  out.push(current);
  return out;
}

const KEY = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$/;
const VALUE = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?)?$/;

export function parseSelector(text: string, flag = 'selector'): LabelRequirement[] {
  const requirements: LabelRequirement[] = [];
  for (const raw of splitTerms(text)) {
    const term = raw.trim();
    if (term === '') throw new UsageError(`--${flag}: empty term in "${text}"`, 'use e.g. -l app=web,tier!=db');
    requirements.push(parseTerm(term, text, flag));
  }
  return requirements;
}

function parseTerm(term: string, whole: string, flag: string): LabelRequirement {
  const bad = (): never => {
    throw new UsageError(`--${flag}: cannot parse "${term}" in "${whole}"`, 'use key=value, key!=value, key in (a,b), key notin (a,b), key or !key');
  };
  const set = /^(\S+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(term);
  if (set) {
    const [, key = '', op, list = ''] = set;
    const values = list.split(',').map((v) => v.trim());
    if (!KEY.test(key) || values.some((v) => !VALUE.test(v)) || values.every((v) => v === '')) bad();
    return { key, op: op === 'in' ? 'in' : 'notin', values };
  }
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
      case 'in':
        return has && r.values.includes(set[r.key]!);
      case 'notin':
        return !has || !r.values.includes(set[r.key]!);
    }
  });
}

export function formatSelector(requirements: LabelRequirement[]): string {
  return requirements
    .map((r) => {
      switch (r.op) {
        case 'eq':
          return `${r.key}=${r.value}`;
        case 'ne':
          return `${r.key}!=${r.value}`;
        case 'in':
        case 'notin':
          return `${r.key} ${r.op} (${r.values.join(',')})`;
        case 'exists':
          return r.key;
        case 'not-exists':
          return `!${r.key}`;
      }
    })
    .join(',');
}
