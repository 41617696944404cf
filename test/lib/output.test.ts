import { describe, expect, it } from 'vitest';
import { PodNotFoundError, RuntimeFailure, UsageError, exitCodeOf, oneLine } from '../../src/lib/errors.js';
import { EXIT_CODE_HELP, ExitCode, exitCodesHelp } from '../../src/lib/exit-codes.js';
import { colorEnabled, createStyler, renderJson, renderTable, renderYaml, toPlain, truncate } from '../../src/lib/output.js';
import { Reporter } from '../../src/lib/reporter.js';

describe('output', () => {
  it('JSON and YAML render the same plain data (Maps become objects, undefined dropped)', async () => {
    const value = { a: 1, b: undefined, m: new Map([['x', { y: true }]]), list: [1, 'two'] };
    expect(toPlain(value)).toEqual({ a: 1, m: { x: { y: true } }, list: [1, 'two'] });
    expect(JSON.parse(renderJson(value))).toEqual(toPlain(value));
    const { parse } = await import('yaml');
    expect(parse(await renderYaml(value))).toEqual(toPlain(value));
  });

  it('tables are borderless, aligned and free of colour codes when colour is off', async () => {
    const text = await renderTable(
      {
        head: ['NAME', 'STATE'],
        rows: [
          ['a', 'running'],
          ['long-name', 'x'],
        ],
      },
      createStyler(false),
    );
    const lines = text.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^NAME\s+STATE$/);
    expect(lines[2]).toMatch(/^long-name\s+x$/);
    expect(lines[0]?.indexOf('STATE')).toBe(lines[1]?.indexOf('running'));
    expect(text).not.toContain('\u001b[');
  });

  it('tables align by what the terminal shows: colour codes take no room, wide characters two', async () => {
    const styler = createStyler(true);
    const text = await renderTable(
      {
        head: ['NAME', 'STATE', 'ERROR'],
        rows: [
          [styler.green('a'), styler.red('stopped'), 'x'],
          ['日本', 'ok', 'y…'],
        ],
      },
      styler,
    );
    const visible = text.split('\n').map((l) => l.replace(/\u001b\[\d+m/g, ''));
    expect(visible).toEqual(['NAME  STATE    ERROR', 'a     stopped  x', '日本  ok       y…']);
    expect(text).toContain('\u001b[32ma\u001b[39m');
  });

  it('colour codes take no room in a table of ASCII text, multi-line cells and rows without headers included', async () => {
    const styler = createStyler(true);
    const spec = {
      head: ['NAME', 'STATE'],
      rows: [
        [styler.green('a'), `${styler.red('stopped')}\nagain`],
        ['long-name', styler.dim('')],
      ],
    };
    const visible = (text: string) => text.split('\n').map((l) => l.replace(/\u001b\[\d+m/g, ''));
    expect(visible(await renderTable(spec, styler))).toEqual(['NAME       STATE', 'a          stopped', '           again', 'long-name  ']);
    expect(visible(await renderTable(spec, styler, { noHeaders: true }))).toEqual(['a          stopped', '           again', 'long-name  ']);
  });

  it('a multi-line cell spans lines of its row; the other cells stay in their columns', async () => {
    const text = await renderTable(
      {
        head: ['A', 'B', 'C'],
        rows: [
          ['one', 'two\nlines', 'end'],
          ['x', 'y', 'z'],
        ],
      },
      createStyler(false),
    );
    expect(text.split('\n')).toEqual(['A    B      C', 'one  two    end', '     lines', 'x    y      z']);
  });

  it('colour only on a TTY without --no-color or NO_COLOR', () => {
    expect(colorEnabled(false, { isTTY: true }, {})).toBe(true);
    expect(colorEnabled(true, { isTTY: true }, {})).toBe(false);
    expect(colorEnabled(false, { isTTY: true }, { NO_COLOR: '' })).toBe(false);
    expect(colorEnabled(false, { isTTY: false }, {})).toBe(false);
    expect(createStyler(true).red('x')).toBe('\u001b[31mx\u001b[39m');
    expect(createStyler(false).red('x')).toBe('x');
  });

  it('truncates with an ellipsis', () => {
    expect(truncate('abcdef', 4)).toBe('abc…');
    expect(truncate('abc', 4)).toBe('abc');
  });
});

describe('errors and exit codes', () => {
  it('maps each error to its documented exit code', () => {
    expect(exitCodeOf(new UsageError('x'))).toBe(2);
    expect(exitCodeOf(new PodNotFoundError(['a/b']))).toBe(4);
    expect(exitCodeOf(new RuntimeFailure('x'))).toBe(1);
    expect(exitCodeOf(new Error('boom'))).toBe(1);
    expect(exitCodeOf(new DOMException('x', 'AbortError'))).toBe(130);
    expect(exitCodeOf(Object.assign(new Error('Nonexistent flag'), { oclif: { exit: 2 } }))).toBe(2);
  });

  it('shows one line, with the hint', () => {
    expect(oneLine(new Error('first\nsecond'))).toBe('first');
    // oclif's flag-value errors keep their reason on the one line
    expect(oneLine(new Error('Parsing --grace \n\tExpected an integer but received: abc\nSee more help with --help'))).toBe('Parsing --grace: Expected an integer but received: abc');
    // podctl's own flag parsers name the flag: said once, not "Parsing --grace: --grace: …"
    expect(oneLine(new Error('Parsing --grace \n\t--grace: "-5" is not a duration\nSee more help with --help'))).toBe('--grace: "-5" is not a duration');
    expect(oneLine(new UsageError('--timeout: "x" is not a duration', 'use e.g. 30s'))).toBe('--timeout: "x" is not a duration (use e.g. 30s)');
  });

  it('documents every exit code once', () => {
    const codes = EXIT_CODE_HELP.map((l) => Number(l.split(' ')[0]));
    expect(codes.sort((a, b) => a - b)).toEqual(Object.values(ExitCode).sort((a, b) => a - b));
    expect(exitCodesHelp([0, 5])).toBe('Exit codes:\n  0   done\n  5   partially done (drain: some pods did not terminate)');
  });
});

describe('Reporter', () => {
  const capture = (isTTY: boolean): { out: string[]; stream: { write(s: string): boolean; isTTY: boolean; columns: number } } => {
    const out: string[] = [];
    return { out, stream: { write: (s: string) => out.push(s) > 0, isTTY, columns: 40 } };
  };

  it('prints each distinct progress line once when not a TTY, no control codes', () => {
    const { out, stream } = capture(false);
    const r = new Reporter('info', stream);
    r.progress('a');
    r.progress('a');
    r.progress('b');
    r.done();
    expect(out).toEqual(['a\n', 'b\n']);
  });

  it('rewrites one status line on a TTY and clears it before a log line', () => {
    const { out, stream } = capture(true);
    const r = new Reporter('info', stream);
    r.progress('working 1');
    r.warn('careful');
    r.progress('working 2');
    r.done();
    expect(out).toEqual(['\r\u001b[2Kworking 1', '\r\u001b[2K', 'warning: careful\n', '\r\u001b[2Kworking 2', '\n']);
  });

  it('respects the log level (progress counts as info)', () => {
    const { out, stream } = capture(false);
    const r = new Reporter('warn', stream);
    r.info('hidden');
    r.progress('hidden too');
    r.debug('hidden as well');
    r.warn('shown');
    expect(out).toEqual(['warning: shown\n']);
  });
});
