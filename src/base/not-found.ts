/**
 * A command word that is not one of podctl's: "did you mean".
 *
 * - At a terminal (stdin and stderr are TTYs), @oclif/plugin-not-found's hook runs as it does in any
 *   oclif CLI: it names the closest command and asks whether to run it (default yes, 10 s); the
 *   command then runs with its own checks and confirmations.
 * - Anywhere else (scripts, CI, pipes) nothing but what was typed ever runs: one line names the
 *   closest command, when one is close, and the exit code is 2 (usage), never the plugin's 127.
 *
 * Closeness is the plugin's own (fast-levenshtein over the visible command ids), so the two paths
 * suggest the same command.
 */
import { Config, Errors, toConfiguredId, type Hook } from '@oclif/core';
import { ExitCode } from '../lib/exit-codes.js';

interface NotFoundOptions {
  id: string;
  argv?: string[];
}

/**
 * The command id nearest to `typed` (at most 2 edits away, or one it begins), or undefined.
 * fast-levenshtein is loaded here, not with the CLI: loading it builds an Intl.Collator, a cost
 * every command's start-up would pay for a word that is almost never mistyped.
 */
export async function closestCommand(typed: string, ids: readonly string[]): Promise<string | undefined> {
  const { default: levenshtein } = await import('fast-levenshtein');
  let best: { id: string; distance: number } | undefined;
  for (const id of ids) {
    const distance = levenshtein.get(typed, id, { useCollator: true });
    if (!best || distance < best.distance) best = { id, distance };
  }
  if (!best) return undefined;
  if (best.distance <= 2) return best.id;
  return ids.find((id) => typed.length >= 3 && id.startsWith(typed));
}

/** What `config.runHook('command_not_found', …)` returns, with podctl's handling. */
async function commandNotFound(config: Config, options: NotFoundOptions): Promise<Hook.Result<unknown>> {
  const ids = config.commands.filter((c) => !c.hidden).map((c) => c.id);
  const typed = toConfiguredId(options.id, config);
  const plugin = config.plugins.get(config.name);
  if (process.stdin.isTTY === true && process.stderr.isTTY === true) {
    const { default: hook } = await import('@oclif/plugin-not-found');
    const context: Hook.Context = {
      config,
      debug: () => undefined,
      error: (message, opts = {}) => Errors.error(message, opts),
      exit: (code = 0) => Errors.exit(code),
      log: (message?: unknown, ...args: unknown[]) => process.stdout.write(`${[message, ...args].map(String).join(' ')}\n`),
      warn: (message) => Errors.warn(message),
    };
    try {
      const result: unknown = await hook.call(context, { ...options, argv: options.argv ?? [], config, context });
      return { successes: plugin ? [{ result, plugin }] : [], failures: [] };
    } catch (error) {
      // the plugin ends a declined suggestion with exit 127: podctl's code for it is 2
      if ((error as { oclif?: { exit?: number } }).oclif?.exit !== 127) throw error;
      return usage(`unknown command "${typed}" (${config.bin} help lists the commands)`);
    }
  }
  const closest = await closestCommand(options.id, ids);
  const suggestion = closest === undefined ? '' : `; did you mean "${config.bin} ${toConfiguredId(closest, config)}"?`;
  return usage(`unknown command "${typed}"${suggestion} (${config.bin} help lists the commands)`);
}

function usage(line: string): never {
  process.stderr.write(`error: ${line}\n`);
  throw new Errors.ExitError(ExitCode.Usage);
}

const ROUTED = Symbol.for('podctl.command-not-found');

/**
 * Routes oclif's command_not_found hook to `commandNotFound` for every Config of this process (oclif
 * re-creates the Config it is given, so the method is replaced on the class of podctl's own bundled
 * oclif; podctl has no plugins to load hooks from). Idempotent.
 */
export function handleCommandNotFound(): void {
  const proto = Config.prototype as Config & { [ROUTED]?: true };
  if (proto[ROUTED]) return;
  const runHook = Object.getOwnPropertyDescriptor(proto, 'runHook')?.value as (this: Config, ...a: unknown[]) => Promise<unknown>;
  proto.runHook = async function (this: Config, event: string, opts: unknown, ...rest: unknown[]) {
    if (event === 'command_not_found') return commandNotFound(this, opts as NotFoundOptions);
    return runHook.call(this, event, opts, ...rest);
  } as Config['runHook'];
  proto[ROUTED] = true;
}
