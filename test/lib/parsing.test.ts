import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../src/lib/duration.js';
import { UsageError } from '../../src/lib/errors.js';
import { ExitCode } from '../../src/lib/exit-codes.js';
import { formatSelector, matchesSelector, parseSelector } from '../../src/lib/selector.js';

describe('parseDuration', () => {
  it.each([
    ['30', 30_000],
    ['1.5', 1_500],
    ['30s', 30_000],
    ['500ms', 500],
    ['2m', 120_000],
    ['1m30s', 90_000],
    ['1h', 3_600_000],
    ['1h2m3s', 3_723_000],
    [' 10s ', 10_000],
  ])('%s → %d ms', (text, ms) => {
    expect(parseDuration(text, 'timeout')).toBe(ms);
  });

  it.each(['', 'abc', '10x', '-5s', '5s junk', 's', '1m30'])('rejects %j naming the flag', (text) => {
    let error: unknown;
    try {
      parseDuration(text, 'timeout');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).exitCode).toBe(ExitCode.Usage);
    expect((error as Error).message).toContain('--timeout');
  });

  it('formats short human durations', () => {
    expect(formatDuration(850)).toBe('850ms');
    expect(formatDuration(12_400)).toBe('12s');
    expect(formatDuration(185_000)).toBe('3m05s');
    expect(formatDuration(3_720_000)).toBe('1h02m');
    expect(formatDuration(-2_000)).toBe('-2s');
  });
});

describe('label selectors', () => {
  const labels = { app: 'web', tier: 'front', 'example.com/team': 'a' };

  it('parses every supported operator', () => {
    expect(parseSelector('app=web,tier!=db,example.com/team,!legacy,x==y')).toEqual([
      { key: 'app', op: 'eq', value: 'web' },
      { key: 'tier', op: 'ne', value: 'db' },
      { key: 'example.com/team', op: 'exists' },
      { key: 'legacy', op: 'not-exists' },
      { key: 'x', op: 'eq', value: 'y' },
    ]);
  });

  it('matches all requirements (AND)', () => {
    expect(matchesSelector(labels, parseSelector('app=web'))).toBe(true);
    expect(matchesSelector(labels, parseSelector('app=web,tier=back'))).toBe(false);
    expect(matchesSelector(labels, parseSelector('tier!=back'))).toBe(true);
    expect(matchesSelector(labels, parseSelector('missing!=x'))).toBe(true);
    expect(matchesSelector(labels, parseSelector('example.com/team'))).toBe(true);
    expect(matchesSelector(labels, parseSelector('!app'))).toBe(false);
    expect(matchesSelector(undefined, parseSelector('!app'))).toBe(true);
    expect(matchesSelector(undefined, parseSelector('app'))).toBe(false);
  });

  it('parses and matches the set-based operators (in, notin), commas inside the parentheses', () => {
    expect(parseSelector('app in (web,api),tier notin (db),!legacy')).toEqual([
      { key: 'app', op: 'in', values: ['web', 'api'] },
      { key: 'tier', op: 'notin', values: ['db'] },
      { key: 'legacy', op: 'not-exists' },
    ]);
    expect(matchesSelector(labels, parseSelector('app in (api,web)'))).toBe(true);
    expect(matchesSelector(labels, parseSelector('app in (api)'))).toBe(false);
    expect(matchesSelector(labels, parseSelector('tier notin (back,db)'))).toBe(true);
    expect(matchesSelector(labels, parseSelector('tier notin (front)'))).toBe(false);
    // notin holds for a pod without the label, in does not (as in Kubernetes)
    expect(matchesSelector(labels, parseSelector('zone notin (a)'))).toBe(true);
    expect(matchesSelector(labels, parseSelector('zone in (a)'))).toBe(false);
    expect(formatSelector(parseSelector('app in (a, b),x notin(c)'))).toBe('app in (a,b),x notin (c)');
  });

  it.each(['', 'app=web,', '=web', 'a b=c', 'app=we b', 'app in ()', 'app in (a b)', 'app in a,b', 'Bad Key in (a)'])('rejects %j naming -l', (text) => {
    expect(() => parseSelector(text)).toThrow(/--selector/);
  });

  it('formats back to the canonical form', () => {
    expect(formatSelector(parseSelector('a==b, c!=d,e,!f'))).toBe('a=b,c!=d,e,!f');
  });
});
