/**
 * `podctl help [COMMAND]`: oclif's own help command (@oclif/plugin-help), served as one of podctl's
 * commands so that it is bundled with the others (the single executable has no node_modules to load
 * plugins from). `podctl help kill` shows what `podctl kill --help` (or `-h`) shows.
 */
import { commands } from '@oclif/plugin-help';

export default class Help extends commands.help {
  static override summary = 'Show help for podctl or for one command (the same as COMMAND --help).';
  static override examples = [
    { description: 'Every command, one line each:', command: '<%= config.bin %> help' },
    { description: "One command's flags, examples and exit codes:", command: '<%= config.bin %> help kill' },
  ];

  // the plugin's flag, with the summary every podctl flag has
  static override flags = {
    'nested-commands': { ...commands.help.flags['nested-commands'], summary: 'Include all nested commands (autocomplete script) in the list.' },
  };
}
