/**
 * `podctl autocomplete script SHELL`: the line a shell's rc file evaluates to load podctl's
 * completion functions (@oclif/plugin-autocomplete; see autocomplete/index.ts).
 */
import Script from '../../../node_modules/@oclif/plugin-autocomplete/lib/commands/autocomplete/script.js';

export default class AutocompleteScript extends Script {
  static override summary = "Print the line a shell rc file uses to load podctl's completion (after podctl autocomplete SHELL).";
  static override examples = ['<%= config.bin %> autocomplete script bash >> ~/.bashrc'];
}
