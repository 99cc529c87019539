/**
 * The lists `pick` gives for each item, one after another: what `items.flatMap(pick)` returns.
 * V8's flatMap defines each element of its result through a runtime call, and the run's hot paths
 * (a request's chunks, a commit group's rows, a part's pieces) spent a per cent of a run's CPU
 * there; a loop of pushes is an order of magnitude cheaper (docs/benchmarks.md, "a twenty-seventh
 * session").
 */
export function concatenated<T, U>(items: readonly T[], pick: (item: T) => readonly U[]): U[] {
  const out: U[] = [];
  for (let i = 0; i < items.length; i++) {
    const list = pick(items[i]!);
    for (let k = 0; k < list.length; k++) out.push(list[k]!);
  }
  return out;
}
