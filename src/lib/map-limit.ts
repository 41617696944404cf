/**
 * Bounded concurrency: one helper for every place that fans work out over many pods or files
 * (folder-wide store reads, drain, terminate), so none opens thousands of files or calls at once.
 * Invariants: at most `limit` calls of `fn` in flight; results in input order; the first rejection
 * rejects the whole call.
 */
/** Runs `fn` over `items` with at most `limit` calls in flight; results in input order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}
