/**
 * Scratch files for state that must not grow in memory (the spilling tables' runs, the id
 * registry's locations): each is unlinked as soon as it is opened, so it is freed when its
 * descriptor closes or the process ends, however it ends. Reads and writes are synchronous and
 * positioned, so callers stay synchronous (writes: files/write-pieces.ts).
 */
import { openSync, readSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';

let nextFile = 0;

/** A new, already unlinked file in `dir`: its descriptor (close it with closeSync). */
export function openScratchFile(dir: string, kind: string): number {
  const path = join(dir, `.embedpipe-${kind}-${process.pid}-${(nextFile++).toString(36)}`);
  const fd = openSync(path, 'wx+');
  unlinkSync(path);
  return fd;
}

/** Fills `bytes` from `position`; throws naming `what` when the file ends first. */
export function readAllAt(fd: number, bytes: Uint8Array, position: number, what: string): void {
  let read = 0;
  while (read < bytes.length) {
    const n = readSync(fd, bytes, read, bytes.length - read, position + read);
    if (n === 0) throw new Error(`${what} ended early`);
    read += n;
  }
}
