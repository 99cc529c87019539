/**
 * Writing a list of buffers to a file in one system call where the kernel takes them all: writev,
 * synchronously, no copy into one buffer. Used where a write is small next to the work around it
 * (a spill entry, a data file's pieces): a write through libuv's pool cost more in handing it over
 * than in writing it (docs/benchmarks.md, "a nineteenth session").
 */
import { writevSync } from 'node:fs';

/** Buffers per writev: Linux's IOV_MAX. */
const MAX_PIECES = 1024;

/** `pieces` one after another from `position`; short writes resumed. Returns the bytes written. */
export function writePiecesAt(fd: number, pieces: readonly Uint8Array[], position: number): number {
  let total = 0;
  let rest = pieces.filter((piece) => piece.byteLength > 0);
  while (rest.length > 0) {
    const batch = rest.slice(0, MAX_PIECES);
    let written = writevSync(fd, batch, position + total);
    total += written;
    let used = 0;
    while (used < batch.length && written >= batch[used]!.byteLength) written -= batch[used++]!.byteLength;
    rest = rest.slice(used);
    if (written > 0) rest[0] = rest[0]!.subarray(written);
  }
  return total;
}
