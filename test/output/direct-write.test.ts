/**
 * Part files written around the page cache (output/direct-write.ts): the bytes read back are the
 * bytes given, at every length around a block's, and none of the file is left in the page cache
 * (fincore); switched off, the same bytes go through the page cache, which the same check sees.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { OutputError } from '../../src/errors.js';
import { TempFile } from '../../src/output/atomic.js';
import {
  createForWriting,
  DIRECT_BLOCK,
  DirectStream,
  setDirectWrites,
} from '../../src/output/direct-write.js';
import { cachedBytes } from '../helpers/page-cache.js';
import { skipOutsideCi } from '../helpers/skip.js';
import { tempFolder } from '../helpers/temp.js';

const dir = await tempFolder('embedpipe-direct-');

afterEach(() => setDirectWrites(true));

/** `bytes` random bytes as `count` pieces of uneven lengths. */
function piecesOf(bytes: number, count: number): Uint8Array[] {
  const all = randomBytes(bytes);
  const cuts = Array.from({ length: count - 1 }, (_, i) =>
    Math.floor((bytes * (i + 1) ** 2) / count ** 2),
  ).sort((a, b) => a - b);
  return [0, ...cuts].map((start, i) => all.subarray(start, cuts[i] ?? bytes));
}

async function writeTemp(
  name: string,
  pieces: readonly Uint8Array[],
): Promise<{ path: string; temp: TempFile }> {
  const path = join(dir, name);
  const temp = await TempFile.create(path, { direct: true });
  temp.writeNow(pieces);
  await temp.close();
  await temp.moveTo(path);
  return { path, temp };
}

describe('direct part writes', () => {
  it('write the bytes given at every length around a block, leaving none of them in the page cache', async () => {
    const lengths = [
      0,
      1,
      DIRECT_BLOCK - 1,
      DIRECT_BLOCK,
      DIRECT_BLOCK + 1,
      3 * DIRECT_BLOCK + 17,
      5 * 2 ** 20 + 3,
    ];
    for (const length of lengths) {
      const pieces = piecesOf(length, length > 2 * DIRECT_BLOCK ? 7 : 1);
      const { path, temp } = await writeTemp(`direct-${length}.parquet`, pieces);
      expect(temp.bytes).toBe(length);
      expect(await cachedBytes(path), `${length} bytes`).toBe(0);
      expect(Buffer.compare(await readFile(path), Buffer.concat(pieces)), `${length} bytes`).toBe(0);
    }
  });

  it('switched off, write the same bytes through the page cache (the check above tells them apart)', async () => {
    setDirectWrites(false);
    const pieces = piecesOf(2 ** 20 + 5, 3);
    const { path } = await writeTemp('cached.parquet', pieces);
    expect(await cachedBytes(path)).toBeGreaterThanOrEqual(2 ** 20);
    expect(Buffer.compare(await readFile(path), Buffer.concat(pieces))).toBe(0);
  });

  it('reuse a staging area: a later, smaller file holds none of an earlier one', async () => {
    const big = piecesOf(3 * 2 ** 20, 2);
    await writeTemp('big.parquet', big);
    const small = [Buffer.from('small part')];
    const { path } = await writeTemp('small.parquet', small);
    expect(await readFile(path, 'utf8')).toBe('small part');
  });

  it('take one writeNow: a second, or a write after it, is an OutputError naming the file', async () => {
    const temp = await TempFile.create(join(dir, 'once.parquet'), { direct: true });
    temp.writeNow(Buffer.from('one'));
    expect(() => temp.writeNow(Buffer.from('two'))).toThrow(OutputError);
    expect(() => temp.writeNow(Buffer.from('two'))).toThrow(temp.path);
    await expect(temp.write(Buffer.from('two'))).rejects.toThrow(OutputError);
    await temp.discard();
    expect((await readdir(dir)).filter((name) => name.startsWith('.once'))).toEqual([]);
  });

  it('stream chunks of any size across windows, leaving none of them in the page cache', async () => {
    const all = randomBytes(19 * 2 ** 20 + 4321);
    const path = join(dir, 'streamed.parquet');
    const temp = await TempFile.create(path, { direct: true });
    for (let at = 0, size = 1; at < all.length; at += size, size = Math.min(size * 3 + 7, 5 * 2 ** 20))
      await temp.write(all.subarray(at, Math.min(all.length, at + size)));
    await temp.close();
    await temp.moveTo(path);
    expect(temp.bytes).toBe(all.length);
    expect(await cachedBytes(path)).toBe(0);
    expect(Buffer.compare(await readFile(path), all)).toBe(0);
  });

  it('stream on through the page cache when a direct write is refused midway, the bytes whole', async () => {
    const folder = join(dir, 'refused-midway');
    await mkdir(folder);
    const path = join(folder, 'x.parquet');
    const { handle, direct } = await createForWriting(path);
    expect(direct).toBe(true);
    let writes = 0;
    // The first window goes out direct; the file system refuses the second as some do (EINVAL).
    const refusing = Object.assign(Object.create(handle), {
      write: (...args: Parameters<typeof handle.write>) =>
        writes++ === 0
          ? handle.write(...args)
          : Promise.reject(Object.assign(new Error('EINVAL: invalid argument, write'), { code: 'EINVAL' })),
    });
    const all = randomBytes(8 * 2 ** 20 + 3 * 2 ** 20 + 17);
    const stream = new DirectStream(path, refusing);
    for (let at = 0; at < all.length; at += 2 ** 20 + 1)
      await stream.write(all.subarray(at, at + 2 ** 20 + 1));
    expect(await stream.finish()).toBe(all.length);
    await handle.close();
    expect(Buffer.compare(await readFile(path), all)).toBe(0);
    const next = await createForWriting(join(folder, 'y.parquet'));
    expect(next.direct).toBe(false);
    await next.handle.close();
  });

  it('where the file system refuses the direct write, write the bytes through the page cache and leave that folder to it', async () => {
    // No file system here refuses a direct write once it opened the file O_DIRECT (ext4 and tmpfs
    // take both; ramfs refuses the open, below): the refusal comes from a handle that answers a
    // write as such a file system does (EINVAL).
    const folder = join(dir, 'refusing');
    await mkdir(folder);
    const path = join(folder, 'x.parquet');
    const { handle } = await createForWriting(path);
    const refusing = Object.assign(Object.create(handle), {
      write: () =>
        Promise.reject(Object.assign(new Error('EINVAL: invalid argument, write'), { code: 'EINVAL' })),
    });
    const pieces = piecesOf(DIRECT_BLOCK + 99, 2);
    const stream = new DirectStream(path, refusing);
    stream.stage(pieces);
    await stream.finish();
    await handle.close();
    expect(Buffer.compare(await readFile(path), Buffer.concat(pieces))).toBe(0);
    const next = await createForWriting(join(folder, 'y.parquet'));
    expect(next.direct).toBe(false);
    await next.handle.close();
    // Another folder is still written direct.
    const elsewhere = await createForWriting(join(dir, 'z.parquet'));
    expect(elsewhere.direct).toBe(true);
    await elsewhere.handle.close();
  });

  it('pass on a failure that is not a refusal (here: a closed file)', async () => {
    const path = join(dir, 'closed.parquet');
    const { handle } = await createForWriting(path);
    await handle.close();
    const stream = new DirectStream(path, handle);
    stream.stage([Buffer.from('bytes')]);
    await expect(stream.finish()).rejects.toThrow();
  });
});

/**
 * ramfs has no O_DIRECT: Linux refuses the open with EINVAL after it created the file. Mounting it
 * takes root (CI runs as root); elsewhere these tests say why they did not run.
 */
describe('direct part writes on a file system that refuses O_DIRECT (ramfs)', () => {
  const run = promisify(execFile);
  const mountPoint = join(dir, 'ramfs');
  let mounted = false;
  let why = '';
  beforeAll(async () => {
    await mkdir(mountPoint);
    try {
      await run('mount', ['-t', 'ramfs', 'ramfs', mountPoint]);
      mounted = true;
    } catch (error) {
      why = `cannot mount ramfs here (${(error as Error).message.split('\n')[0]})`;
    }
  });
  afterAll(async () => {
    if (mounted) await run('umount', [mountPoint]);
  });

  it('write the same bytes through the page cache, and do not try that folder again', async (context) => {
    if (!mounted) skipOutsideCi(context, why);
    const pieces = piecesOf(3 * DIRECT_BLOCK + 5, 3);
    const path = join(mountPoint, 'part.parquet');
    const temp = await TempFile.create(path, { direct: true });
    temp.writeNow(pieces);
    await temp.close();
    await temp.moveTo(path);
    expect(Buffer.compare(await readFile(path), Buffer.concat(pieces))).toBe(0);
    expect(await readdir(mountPoint)).toEqual(['part.parquet']);
    const next = await createForWriting(join(mountPoint, 'next.parquet'));
    expect(next.direct).toBe(false);
    await next.handle.close();
  });
});
