/**
 * `podctl autocomplete [bash|zsh]`: oclif's completion command (@oclif/plugin-autocomplete), served
 * as one of podctl's commands so that it is bundled with the others. It writes the completion
 * functions, generated from the command manifest (every command, its flags and their summaries),
 * under podctl's cache directory (XDG_CACHE_HOME/podctl/autocomplete, or PODCTL_CACHE_DIR), and
 * prints how to load them from the shell's rc file.
 *
 * The plugin's package exports no command classes: they are imported from its files.
 */
import Index from '../../../node_modules/@oclif/plugin-autocomplete/lib/commands/autocomplete/index.js';

export default class Autocomplete extends Index {
  static override summary = "Set up bash or zsh completion of podctl's commands and flags.";
  // the plugin types its examples as plain command lines
  static override examples = ['<%= config.bin %> <%= command.id %> bash', '<%= config.bin %> <%= command.id %> zsh', '<%= config.bin %> <%= command.id %> --refresh-cache'];

  // the plugin's flag, with the summary every podctl flag has
  static override flags = {
    'refresh-cache': { ...Index.flags['refresh-cache'], summary: 'Only rewrite the completion functions (after an upgrade); print no instructions.' },
  };
}
