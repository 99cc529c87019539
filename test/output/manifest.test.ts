import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutputError } from '../../src/errors.js';
import { digestInput } from '../../src/output/input-digest.js';
import {
  formatUsd,
  type Manifest,
  readManifest,
  redactBaseUrl,
  withDecimalCosts,
  writeManifest,
} from '../../src/output/manifest.js';

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
  version: 2,
  tool: { name: 'embedpipe', version: '0.1.0' },
  createdAt: '2025-01-02T03:04:05.000Z',
  model: 'test/model-1',
  dims: 1536,
  format: 'parquet',
  providers: ['alpha', 'beta'],
  input: { path: '/data/corpus.csv', kind: 'file', bytes: 1234, files: 1, sha256: 'a'.repeat(64) },
  gateway: { baseUrl: 'https://gateway.example/api/v1', emulator: false },
  plan: { maxTokens: 512, overlap: 0, maxInputs: 128, nested: { a: [1, 'ü'] } },
  counts: {
    documents: 10,
    chunks: 12,
    rows: 11,
    rejects: 1,
    failures: 1,
    tokens: 5000,
    costUsd: '0.0001000000',
    requests: 2,
    retries: 1,
  },
  files: ['part-b.parquet', 'part-a.parquet', 'part-c.parquet'],
};

describe('manifest', () => {
  it('round-trips, with files sorted, and leaves no temp file', async () => {
    const dir = freshDir();
    await writeManifest(dir, manifest);
    expect(await readdir(dir)).toEqual(['_manifest.json']);
    const back = await readManifest(dir);
    expect(back).toEqual({ ...manifest, files: ['part-a.parquet', 'part-b.parquet', 'part-c.parquet'] });
    expect(await readFile(join(dir, '_manifest.json'), 'utf8')).toMatch(/^\{\n {2}"version": 2,[\s\S]*\}\n$/);
  });

  it('is undefined when absent', async () => {
    expect(await readManifest(freshDir())).toBeUndefined();
  });

  it('refuses a file that is not a manifest', async () => {
    const dir = freshDir();
    await writeManifest(dir, manifest);
    await writeFile(join(dir, '_manifest.json'), '{ not json');
    await expect(readManifest(dir)).rejects.toThrow(/_manifest\.json: not valid JSON/);
    await writeFile(join(dir, '_manifest.json'), JSON.stringify({ ...manifest, version: 3 }));
    await expect(readManifest(dir)).rejects.toThrow(OutputError);
    await writeFile(
      join(dir, '_manifest.json'),
      JSON.stringify({ ...manifest, counts: { ...manifest.counts, costUsd: 0.0001 } }),
    );
    await expect(readManifest(dir)).rejects.toThrow(/counts\.costUsd/);
    await writeFile(join(dir, '_manifest.json'), JSON.stringify({ ...manifest, files: 'part-a.parquet' }));
    await expect(readManifest(dir)).rejects.toThrow(/files/);
  });

  it('refuses file entries outside the output folder', async () => {
    for (const file of ['/abs/part-a.parquet', '../part-a.parquet', 'x/../../y.parquet', '']) {
      await expect(writeManifest(freshDir(), { ...manifest, files: [file] }), file).rejects.toThrow(
        OutputError,
      );
    }
  });

  it("reads a previous version's manifest.json when _manifest.json is missing, and removes it on write", async () => {
    const dir = freshDir();
    await writeManifest(dir, manifest);
    const { input: _input, gateway: _gateway, counts, ...rest } = manifest;
    const { costUsd: _cost, ...otherCounts } = counts;
    const v1 = { ...rest, version: 1, counts: { ...otherCounts, cost: 0.13514289999999998 } };
    await rm(join(dir, '_manifest.json'));
    await writeFile(join(dir, 'manifest.json'), JSON.stringify(v1));
    expect(await readManifest(dir)).toEqual(v1);
    await writeManifest(dir, manifest);
    expect(await readdir(dir)).toEqual(['_manifest.json']);
    expect((await readManifest(dir))?.version).toBe(2);
  });

  it('keeps money as a decimal string of dollars with 10 decimals, in counts and in plan', async () => {
    expect(formatUsd(0.13514289999999998)).toBe('0.1351429000');
    expect(formatUsd(0)).toBe('0.0000000000');
    expect(formatUsd(2e-8 * 3)).toBe('0.0000000600');
    expect(formatUsd(1234.5)).toBe('1234.5000000000');
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => formatUsd(bad)).toThrow(OutputError);
    expect(
      withDecimalCosts({ sizing: { calibration: { requests: 2, cost: 0.1 + 0.2 } }, cost: 'x' }),
    ).toEqual({
      sizing: { calibration: { requests: 2, costUsd: '0.3000000000' } },
      cost: 'x',
    });
    const dir = freshDir();
    await writeManifest(dir, { ...manifest, plan: { sizing: { calibration: { cost: 0.0000123 } } } });
    const text = await readFile(join(dir, '_manifest.json'), 'utf8');
    expect(text).toContain('"costUsd": "0.0000123000"');
    expect(text).toContain('"costUsd": "0.0001000000"');
    expect(text).not.toMatch(/"cost":/);
  });

  it('keeps the gateway base URL without credentials, query string or fragment', () => {
    expect(redactBaseUrl('https://user:secret@gateway.example:8443/api/v1?key=sk-123#frag')).toBe(
      'https://gateway.example:8443/api/v1',
    );
    expect(redactBaseUrl('https://gateway.example/api/v1')).toBe('https://gateway.example/api/v1');
    expect(redactBaseUrl('http://127.0.0.1:5000/api/v1/')).toBe('http://127.0.0.1:5000/api/v1/');
    const unparseable = redactBaseUrl('gateway user:pw@host/v1?token=x');
    expect(unparseable).not.toMatch(/pw|token/);
  });

  it("records the input: size and streamed sha256 of a file, or of a folder's files", async () => {
    const dir = freshDir();
    await mkdir(join(dir, 'docs', 'sub'), { recursive: true });
    await writeFile(join(dir, 'docs', 'a.txt'), 'alpha\n');
    await writeFile(join(dir, 'docs', 'sub', 'b.md'), 'béta');
    await writeFile(join(dir, 'docs', '.hidden.txt'), 'skipped');
    await writeFile(join(dir, 'docs', 'notes.bin'), 'not a text file');
    const sha = (text: string) => createHash('sha256').update(text).digest('hex');

    const file = await digestInput(join(dir, 'docs', 'a.txt'));
    expect(file).toEqual({
      path: join(dir, 'docs', 'a.txt'),
      kind: 'file',
      bytes: 6,
      files: 1,
      sha256: sha('alpha\n'),
    });

    const include = (name: string) => /\.(txt|md)$/.test(name);
    const folder = await digestInput(join(dir, 'docs'), { include });
    const listing = `${sha('alpha\n')}  a.txt\n${sha('béta')}  sub/b.md\n`;
    expect(folder).toEqual({
      path: join(dir, 'docs'),
      kind: 'folder',
      bytes: 6 + Buffer.byteLength('béta'),
      files: 2,
      sha256: sha(listing),
    });
    await writeFile(join(dir, 'docs', 'sub', 'b.md'), 'beta');
    expect((await digestInput(join(dir, 'docs'), { include })).sha256).not.toBe(folder.sha256);
    expect((await digestInput(join(dir, 'docs'))).files).toBe(3);
  });
});
