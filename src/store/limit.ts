/**
 * Bounded concurrency for the store's folder-wide reads, so that a state dir with thousands of
 * pods never opens thousands of files at once (EMFILE).
 */
export const READ_CONCURRENCY = 32;
