/**
 * The UTF-8 byte order mark (EF BB BF) at the start of a file or a body: dropped before the bytes are
 * decoded or parsed. Shared by the corpus readers and the gateway's answer bodies.
 */

/** True when `bytes` start with the UTF-8 byte order mark EF BB BF. */
export function hasBom(bytes: Uint8Array): boolean {
  return bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
}

/** `bytes` without a leading UTF-8 byte order mark (a view, not a copy). */
export function stripBom<T extends Uint8Array>(bytes: T): T {
  return hasBom(bytes) ? (bytes.subarray(3) as T) : bytes;
}

/**
 * Drops the byte order mark at the start of a byte stream, wherever the chunk boundaries fall.
 * Holds back at most the first two bytes until it can tell.
 */
export async function* withoutBom(chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let head: Buffer | undefined = Buffer.alloc(0);
  for await (const chunk of chunks) {
    if (head === undefined) {
      yield chunk;
      continue;
    }
    head = Buffer.concat([head, chunk]);
    if (head.length < 3) continue;
    const rest = stripBom(head);
    head = undefined;
    if (rest.length > 0) yield rest;
  }
  if (head !== undefined && head.length > 0) yield head;
}
