/**
 * How much of a file the kernel holds in its page cache, by util-linux's `fincore` (Debian:
 * util-linux-extra; .ci/run installs it where it is missing): what tells a file written around the
 * page cache from one written through it.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Bytes of `path` resident in the page cache. */
export async function cachedBytes(path: string): Promise<number> {
  const { stdout } = await execFileAsync('fincore', ['--bytes', '--noheadings', '--output', 'RES', path]);
  const bytes = Number(stdout.trim());
  if (!Number.isInteger(bytes)) throw new Error(`fincore said "${stdout.trim()}" of ${path}`);
  return bytes;
}
