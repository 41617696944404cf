/** fast-levenshtein 3 (CommonJS, no types of its own): the edit distance @oclif/plugin-not-found uses. */
declare module 'fast-levenshtein' {
  const levenshtein: { get(a: string, b: string, options?: { useCollator?: boolean }): number };
  export default levenshtein;
}
