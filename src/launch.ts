/**
 * The CLI as one script: oclif and every command, bundled by scripts/build.mjs into
 * dist/podctl.cjs, which src/boot.ts compiles with a V8 code cache (Node 20 has no module compile
 * cache, and compiling podctl's ~1 MB of JavaScript afresh is a fifth of a command's start-up).
 *
 * oclif still does everything it does for `bin/run.js` (argv, help, --version, hooks, errors,
 * exit codes): it only gets each command class from this script instead of importing
 * dist/commands/<id>.js, which would load a second copy of oclif and of podctl's code.
 *
 * Invariant: COMMANDS names exactly the commands in the manifest (test/launch.test.ts checks it);
 * a command is initialised only when it runs.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Config, execute, type Command, type Interfaces } from '@oclif/core';
import { installLastResort } from './base/last-resort.js';
import { handleCommandNotFound } from './base/not-found.js';

type CommandClass = Command.Class;
type PJSON = Interfaces.PJSON;

/** Every command's class, loaded on first use (each stays its own lazily initialised module). */
export const COMMANDS: Readonly<Record<string, () => Promise<CommandClass>>> = {
  agent: async () => (await import('./commands/agent.js')).default,
  autocomplete: async () => (await import('./commands/autocomplete/index.js')).default,
  'autocomplete:script': async () => (await import('./commands/autocomplete/script.js')).default,
  drain: async () => (await import('./commands/drain.js')).default,
  evict: async () => (await import('./commands/evict.js')).default,
  help: async () => (await import('./commands/help.js')).default,
  kill: async () => (await import('./commands/kill.js')).default,
  report: async () => (await import('./commands/report.js')).default,
  simulator: async () => (await import('./commands/simulator.js')).default,
  status: async () => (await import('./commands/status.js')).default,
  'sync-known': async () => (await import('./commands/sync-known.js')).default,
  version: async () => (await import('./commands/version.js')).default,
  watch: async () => (await import('./commands/watch.js')).default,
};

/** Whether `id` is one of podctl's commands (the loader keeps a code cache per command). */
export function isCommand(id: string | undefined): boolean {
  return id !== undefined && Object.hasOwn(COMMANDS, id);
}

/**
 * Runs the CLI for `argv` as oclif's `execute` does, with the commands served from this script.
 * `root` is the package root (where package.json and oclif.manifest.json are); `packageJson`, when
 * given, is used instead of reading root/package.json.
 */
export async function main(root: string, argv: string[], packageJson?: PJSON): Promise<void> {
  installLastResort(argv);
  // package.json is read here (oclif would search for it upwards from `root` first), unless the
  // caller carries it (the single executable, src/sea.ts); podctl has no user or dev plugins.
  const pjson = packageJson ?? (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as PJSON);
  const config = await Config.load({ root, pjson, userPlugins: false, devPlugins: false });
  const plugin = config.plugins.get(config.name);
  for (const [id, load] of Object.entries(COMMANDS)) {
    const loadable = config.findCommand(id);
    if (!loadable) continue;
    loadable.load = async () => {
      const command = await load();
      // What oclif's plugin loader stamps on a class it imports.
      return Object.assign(command, { id, plugin, isESM: false, relativePath: loadable.relativePath });
    };
  }
  // "did you mean": @oclif/plugin-not-found's hook, served from this script (base/not-found.ts)
  handleCommandNotFound();
  await execute({ args: argv, loadOptions: config });
}
