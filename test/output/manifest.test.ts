import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutputError } from '../../src/errors.js';
import { type Manifest, readManifest, writeManifest } from '../../src/output/manifest.js';

let root: string;
let n = 0;
const freshDir = () => join(root, `m${n++}`);
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'embedpipe-manifest-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const manifest: Manifest = {
  version: 1,
  tool: { name: 'embedpipe', version: '0.1.0' },
  createdAt: '2025-01-02T03:04:05.000Z',
  model: 'test/model-1',
  dims: 1536,
  format: 'parquet',
  providers: ['alpha', 'beta'],
  plan: { maxTokens: 512, overlap: 0, maxInputs: 128, nested: { a: [1, 'ü'] } },
  counts: {
    documents: 10,
    chunks: 12,
    rows: 11,
    rejects: 1,
    failures: 1,
    tokens: 5000,
    cost: 0.0001,
    requests: 2,
    retries: 1,
  },
  files: ['part-b.parquet', 'part-a.parquet', 'part-c.parquet'],
};

describe('manifest', () => {
  it('round-trips, with files sorted, and leaves no temp file', async () => {
    const dir = freshDir();
    await writeManifest(dir, manifest);
    expect(await readdir(dir)).toEqual(['manifest.json']);
    const back = await readManifest(dir);
    expect(back).toEqual({ ...manifest, files: ['part-a.parquet', 'part-b.parquet', 'part-c.parquet'] });
    expect(await readFile(join(dir, 'manifest.json'), 'utf8')).toMatch(/^\{\n {2}"version": 1,[\s\S]*\}\n$/);
  });

  it('is undefined when absent', async () => {
    expect(await readManifest(freshDir())).toBeUndefined();
  });

  it('refuses a file that is not a manifest', async () => {
    const dir = freshDir();
    await writeManifest(dir, manifest);
    await writeFile(join(dir, 'manifest.json'), '{ not json');
    await expect(readManifest(dir)).rejects.toThrow(/manifest\.json: not valid JSON/);
    await writeFile(join(dir, 'manifest.json'), JSON.stringify({ ...manifest, version: 2 }));
    await expect(readManifest(dir)).rejects.toThrow(OutputError);
    await writeFile(join(dir, 'manifest.json'), JSON.stringify({ ...manifest, files: 'part-a.parquet' }));
    await expect(readManifest(dir)).rejects.toThrow(/files/);
  });

  it('refuses file entries outside the output folder', async () => {
    for (const file of ['/abs/part-a.parquet', '../part-a.parquet', 'x/../../y.parquet', '']) {
      await expect(writeManifest(freshDir(), { ...manifest, files: [file] }), file).rejects.toThrow(
        OutputError,
      );
    }
  });
});
