import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutputError } from '../../src/errors.js';
import { isTempName, TempFile, tempPathFor, writeFileAtomic } from '../../src/output/atomic.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'embedpipe-atomic-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('writeFileAtomic', () => {
  it('writes text and bytes, replaces an existing file, leaves no temp file', async () => {
    const path = join(dir, 'a.json');
    await writeFileAtomic(path, 'first ✓\n');
    expect(await readFile(path, 'utf8')).toBe('first ✓\n');
    await writeFileAtomic(path, new Uint8Array([1, 2, 3]));
    expect([...(await readFile(path))]).toEqual([1, 2, 3]);
    expect(await readdir(dir)).toEqual(['a.json']);
  });

  it('uses temp names that no dataset glob matches', () => {
    for (const target of ['part-x.parquet', 'part-x.arrow', '_manifest.json', '_rejects.jsonl']) {
      const temp = basename(tempPathFor(join(dir, target)));
      expect(isTempName(temp), temp).toBe(true);
      expect(temp.startsWith('.')).toBe(true);
      expect(temp).not.toMatch(/\.(parquet|arrow)$|^_manifest\.json$/);
    }
    expect(isTempName('part-x.parquet')).toBe(false);
  });

  it('throws OutputError naming the path and the cause, and removes the temp file', async () => {
    const missing = join(dir, 'no-such-folder', 'x.parquet');
    const error = await writeFileAtomic(missing, 'x').catch((e) => e);
    expect(error).toBeInstanceOf(OutputError);
    expect(error.message).toContain(missing);
    expect(error.message).toContain('ENOENT');
    expect(error.cause).toMatchObject({ code: 'ENOENT' });

    const sub = join(dir, 'sub');
    await mkdir(join(sub, 'taken.parquet'), { recursive: true });
    await writeFile(join(sub, 'taken.parquet', 'keep'), 'x');
    await expect(writeFileAtomic(join(sub, 'taken.parquet'), 'x')).rejects.toThrow(OutputError);
    expect(await readdir(sub)).toEqual(['taken.parquet']);
  });
});

describe('TempFile.writeNow', () => {
  it('writes pieces one after another, empty ones and more than one writev takes included', async () => {
    const path = join(dir, 'pieces.bin');
    const temp = await TempFile.create(path);
    // 3,000 pieces: writev takes at most 1,024 buffers a call on Linux.
    const pieces = Array.from({ length: 3000 }, (_, i) => new Uint8Array(i % 7).fill(i % 251));
    pieces.push(new Uint8Array(5 * 2 ** 20).fill(9)); // one large enough for a short write to be possible
    temp.writeNow(pieces);
    temp.writeNow(new Uint8Array([1, 2, 3]));
    await temp.close();
    await temp.moveTo(path);
    const expected = Buffer.concat([...pieces, new Uint8Array([1, 2, 3])]);
    expect(temp.bytes).toBe(expected.length);
    expect((await readFile(path)).equals(expected)).toBe(true);
  });
});
