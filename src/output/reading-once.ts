/** `read`, with each path read once: a second call gets the first call's promise. */
export function readingOnce<T>(read: (path: string) => Promise<T>): (path: string) => Promise<T> {
  const reads = new Map<string, Promise<T>>();
  return (path) => {
    let pending = reads.get(path);
    if (pending === undefined) {
      pending = read(path);
      reads.set(path, pending);
    }
    return pending;
  };
}
