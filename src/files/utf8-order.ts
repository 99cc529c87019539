/**
 * Sorting by a string in UTF-8 byte order, which is code point order: the order of a folder's
 * files wherever it is stored or hashed (JS string order compares UTF-16 code units and puts
 * astral characters before U+E000–U+FFFF).
 */

/** `items` sorted by `key` as UTF-8 bytes (a new array; each key encoded once, not per comparison). */
export function sortedByUtf8<T>(items: readonly T[], key: (item: T) => string): T[] {
  return items
    .map((item) => ({ item, bytes: Buffer.from(key(item), 'utf8') }))
    .sort((a, b) => Buffer.compare(a.bytes, b.bytes))
    .map(({ item }) => item);
}
