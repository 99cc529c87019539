/** VersionedDataset: legacy migration, staging (resume, hard links), the atomic switch, prune, remove. */
import {
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutputError } from '../../src/errors.js';
import { DatasetWriter } from '../../src/output/dataset.js';
import { type Manifest, readManifest, writeManifest } from '../../src/output/manifest.js';
import { VersionedDataset } from '../../src/output/versions.js';
import { makeBatch } from './fixtures.js';

const MODEL = 'test/model-1';
const OTHER_MODEL = 'test/model-2';

let root: string;
let n = 0;
/** A fresh dataset link path (nothing created) for each test. */
const freshLink = () => join(root, `out${n++}`);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'embedpipe-versions-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function manifest(files: string[], model = MODEL, format: 'parquet' | 'arrow' = 'parquet'): Manifest {
  return {
    version: 2,
    tool: { name: 'embedpipe', version: '0.0.0-test' },
    createdAt: new Date(0).toISOString(),
    model,
    dims: 3,
    format,
    providers: ['test'],
    input: { path: '/corpus.jsonl', kind: 'file', bytes: 10, files: 1, sha256: 'a'.repeat(64) },
    gateway: { baseUrl: 'http://localhost/v1', emulator: true },
    plan: { maxTokens: 512 },
    counts: {
      documents: 1,
      chunks: 1,
      rows: 1,
      rejects: 0,
      failures: 0,
      tokens: 1,
      costUsd: '0.0000000000',
      requests: 1,
      retries: 0,
    },
    files,
  };
}

/** Writes one real parquet part and the manifest naming it into `dir`: a complete dataset folder. */
async function writeCompleteDataset(
  dir: string,
  opts: { model?: string; batchId?: string; calibration?: boolean } = {},
): Promise<string> {
  const batchId = opts.batchId ?? 'b1';
  const writer = new DatasetWriter({ dir, format: 'parquet', metadata: {} });
  const part = await writer.writePart(batchId, makeBatch({ batchId, rows: 4, dims: 3, seed: n }));
  if (opts.calibration) await writeFile(join(dir, '_calibration.json'), '{"tokensPerByte":0.3}\n');
  await writeManifest(dir, manifest([part.file], opts.model ?? MODEL));
  return part.file;
}

/** A dataset whose current version (v000001) is complete, with one data file. */
async function datasetWithCurrent(
  opts: { model?: string; calibration?: boolean } = {},
): Promise<{ dataset: VersionedDataset; file: string }> {
  const dataset = new VersionedDataset(freshLink());
  await dataset.prepare();
  const staging = await dataset.staging({ model: opts.model ?? MODEL, format: 'parquet' });
  const file = await writeCompleteDataset(staging.dir, opts);
  await dataset.switchTo(staging.name);
  return { dataset, file };
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

describe('VersionedDataset.prepare', () => {
  it('creates the versions folder and removes an empty folder at the link path', async () => {
    const link = freshLink();
    await mkdir(link);
    const dataset = new VersionedDataset(link);
    await dataset.prepare();
    expect(await exists(link)).toBe(false);
    expect((await stat(dataset.root)).isDirectory()).toBe(true);
    expect(await dataset.current()).toBeUndefined();

    // The first switch puts the link where the folder was.
    const staging = await dataset.staging({ model: MODEL, format: 'parquet' });
    await writeCompleteDataset(staging.dir);
    await dataset.switchTo(staging.name);
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(await dataset.current()).toBe('v000001');
  });

  it('migrates a legacy dataset folder (manifest + parquet) to v000001 and makes it current', async () => {
    const link = freshLink();
    const file = await writeCompleteDataset(link);
    const before = await readFile(join(link, file));
    const dataset = new VersionedDataset(link);
    await dataset.prepare();

    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(await dataset.current()).toBe('v000001');
    expect((await readdir(dataset.root)).filter((name) => !name.startsWith('.'))).toEqual(['v000001']);
    // Readable through the link, byte for byte.
    expect(await readFile(join(link, file))).toEqual(before);
    expect((await readManifest(link))?.files).toEqual([file]);
    const versions = await dataset.list();
    expect(versions.map((v) => [v.name, v.current, v.manifest?.model])).toEqual([['v000001', true, MODEL]]);

    // Preparing again is a no-op.
    await dataset.prepare();
    expect(await dataset.current()).toBe('v000001');
    expect((await dataset.list()).length).toBe(1);
  });

  it('migrates a legacy folder without a manifest as an unfinished version (no link yet)', async () => {
    const link = freshLink();
    const writer = new DatasetWriter({ dir: link, format: 'parquet', metadata: {} });
    await writer.writePart('b1', makeBatch({ batchId: 'b1', rows: 2, dims: 3, seed: 1 }));
    const dataset = new VersionedDataset(link);
    await dataset.prepare();
    expect(await exists(link)).toBe(false);
    expect(await readdir(join(dataset.root, 'v000001'))).toEqual(['part-b1.parquet']);
    // The next run resumes it.
    expect(await dataset.staging({ model: MODEL, format: 'parquet' })).toMatchObject({
      name: 'v000001',
      created: false,
    });
  });

  it('refuses a folder of foreign files, naming the folder, and leaves it alone', async () => {
    const link = freshLink();
    await mkdir(link);
    await writeFile(join(link, 'notes.txt'), 'mine');
    await writeFile(join(link, 'photo.jpg'), 'mine too');
    const dataset = new VersionedDataset(link);
    const error = await dataset.prepare().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OutputError);
    expect((error as Error).message).toContain(link);
    expect((await lstat(link)).isDirectory()).toBe(true);
    expect((await readdir(link)).sort()).toEqual(['notes.txt', 'photo.jpg']);
    expect(await readdir(dataset.root)).toEqual([]);
  });

  it('refuses a dataset folder that also holds foreign files (they would be deleted with the version)', async () => {
    const link = freshLink();
    await mkdir(link);
    await writeFile(join(link, 'part-b1.parquet'), 'data');
    await writeFile(join(link, 'notes.txt'), 'mine');
    const dataset = new VersionedDataset(link);
    await expect(dataset.prepare()).rejects.toThrow(/notes\.txt/);
    expect((await readdir(link)).sort()).toEqual(['notes.txt', 'part-b1.parquet']);
  });

  it('refuses a file at the link path', async () => {
    const link = freshLink();
    await writeFile(link, 'a file');
    const error = await new VersionedDataset(link).prepare().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OutputError);
    expect((error as Error).message).toContain(link);
    expect(await readFile(link, 'utf8')).toBe('a file');
  });

  it('current() refuses a link that does not point into the versions folder', async () => {
    const link = freshLink();
    await mkdir(`${link}-elsewhere`);
    await symlink(`${link}-elsewhere`, link);
    await expect(new VersionedDataset(link).current()).rejects.toThrow(OutputError);
  });
});

describe('VersionedDataset.staging', () => {
  it('creates v000001, then resumes the same unfinished version', async () => {
    const dataset = new VersionedDataset(freshLink());
    await dataset.prepare();
    const first = await dataset.staging({ model: MODEL, format: 'parquet' });
    expect(first).toEqual({
      name: 'v000001',
      dir: join(dataset.root, 'v000001'),
      created: true,
      linked: 0,
    });
    expect(await readdir(first.dir)).toEqual([]);
    // No temp folder left beside it.
    expect(await readdir(dataset.root)).toEqual(['v000001']);

    const again = await dataset.staging({ model: MODEL, format: 'parquet' });
    expect(again).toEqual({ name: 'v000001', dir: first.dir, created: false, linked: 0 });
  });

  it('hard-links the current version’s data files and calibration for the same model and format', async () => {
    const { dataset, file } = await datasetWithCurrent({ calibration: true });
    const staging = await dataset.staging({ model: MODEL, format: 'parquet' });
    expect(staging).toMatchObject({ name: 'v000002', created: true, linked: 1 });
    expect((await readdir(staging.dir)).sort()).toEqual(['_calibration.json', file]);
    const current = join(dataset.root, 'v000001');
    for (const name of [file, '_calibration.json']) {
      expect((await stat(join(staging.dir, name))).ino, name).toBe((await stat(join(current, name))).ino);
    }
    // The manifest is not carried over: the new version stays unfinished until its run writes one.
    expect(await readManifest(staging.dir)).toBeUndefined();
    // The link still reads the old version.
    expect(await dataset.current()).toBe('v000001');
  });

  it('links nothing for another model, or another format', async () => {
    const other = await datasetWithCurrent({ calibration: true });
    const forOtherModel = await other.dataset.staging({ model: OTHER_MODEL, format: 'parquet' });
    expect(forOtherModel).toMatchObject({ name: 'v000002', created: true, linked: 0 });
    expect(await readdir(forOtherModel.dir)).toEqual([]);

    const arrow = await datasetWithCurrent();
    const forArrow = await arrow.dataset.staging({ model: MODEL, format: 'arrow' });
    expect(forArrow).toMatchObject({ name: 'v000002', created: true, linked: 0 });
    expect(await readdir(forArrow.dir)).toEqual([]);
  });
});

describe('VersionedDataset.switchTo', () => {
  it('points the link at the version with a relative target', async () => {
    const { dataset } = await datasetWithCurrent();
    expect(await readlink(dataset.link)).toBe(join(`${dataset.link.split('/').at(-1)}.versions`, 'v000001'));
    const staging = await dataset.staging({ model: MODEL, format: 'parquet' });
    await writeManifest(staging.dir, manifest((await readManifest(dataset.link))?.files.slice() ?? []));
    await dataset.switchTo(staging.name);
    const target = await readlink(dataset.link);
    expect(target.startsWith('/')).toBe(false);
    expect(target).toBe(`${dataset.link.split('/').at(-1)}.versions/v000002`);
    expect(await dataset.current()).toBe('v000002');
    // No temp link left beside the dataset link.
    expect((await readdir(root)).filter((name) => name.includes('.link-'))).toEqual([]);
  });

  it('never leaves the link missing while it is switched back and forth', async () => {
    const { dataset, file } = await datasetWithCurrent();
    const staging = await dataset.staging({ model: MODEL, format: 'parquet' });
    await writeManifest(staging.dir, manifest([file]));

    let switching = true;
    let reads = 0;
    const failures: string[] = [];
    const reader = async () => {
      while (switching) {
        try {
          await stat(join(dataset.link, '_manifest.json'));
          await readdir(dataset.link);
          reads += 1;
        } catch (error) {
          failures.push((error as NodeJS.ErrnoException).code ?? String(error));
        }
      }
    };
    const readers = [reader(), reader(), reader()];
    try {
      for (let i = 0; i < 200; i++) await dataset.switchTo(i % 2 === 0 ? 'v000002' : 'v000001');
    } finally {
      switching = false;
      await Promise.all(readers);
    }
    expect(failures).toEqual([]);
    expect(reads).toBeGreaterThan(0);
    expect(await dataset.current()).toBe('v000001');
  });
});

describe('VersionedDataset.prune and remove', () => {
  /**
   * v1 A, v2 B (another model), v3 unfinished, v4 A, v5 A (current), v6 unfinished (a run building
   * the next version).
   */
  async function mixedDataset(): Promise<VersionedDataset> {
    const dataset = new VersionedDataset(freshLink());
    await dataset.prepare();
    const models: (string | undefined)[] = [MODEL, OTHER_MODEL, undefined, MODEL, MODEL, undefined];
    for (const [i, model] of models.entries()) {
      const dir = join(dataset.root, `v00000${i + 1}`);
      await mkdir(dir);
      if (model) await writeCompleteDataset(dir, { model });
    }
    await dataset.switchTo('v000005');
    return dataset;
  }
  const names = async (dataset: VersionedDataset) => (await dataset.list()).map((v) => v.name);

  it('keep=1 keeps the newest older version of the model, other models, and newer unfinished ones', async () => {
    const dataset = await mixedDataset();
    expect((await dataset.prune(1)).sort()).toEqual(['v000001', 'v000003']);
    expect(await names(dataset)).toEqual(['v000002', 'v000004', 'v000005', 'v000006']);
    expect(await dataset.current()).toBe('v000005');
    // Removed whole: no trash left behind.
    expect((await readdir(dataset.root)).sort()).toEqual(['v000002', 'v000004', 'v000005', 'v000006']);
  });

  it('keep=0 keeps only the current version of the model (and other models’ versions)', async () => {
    const dataset = await mixedDataset();
    expect((await dataset.prune(0)).sort()).toEqual(['v000001', 'v000003', 'v000004']);
    expect(await names(dataset)).toEqual(['v000002', 'v000005', 'v000006']);
    // Data still readable through the link.
    const files = (await readManifest(dataset.link))?.files ?? [];
    expect(files.length).toBe(1);
    expect((await stat(join(dataset.link, files[0]!))).size).toBeGreaterThan(0);
  });

  it('keeps the data of a pruned version’s hard links in the current version', async () => {
    const { dataset, file } = await datasetWithCurrent();
    const staging = await dataset.staging({ model: MODEL, format: 'parquet' });
    await writeManifest(staging.dir, manifest([file]));
    await dataset.switchTo(staging.name);
    expect(await dataset.prune(0)).toEqual(['v000001']);
    expect((await readFile(join(dataset.link, file))).byteLength).toBeGreaterThan(0);
  });

  it('prunes nothing while there is no complete current version', async () => {
    const dataset = new VersionedDataset(freshLink());
    await dataset.prepare();
    await dataset.staging({ model: MODEL, format: 'parquet' });
    expect(await dataset.prune(0)).toEqual([]);
    expect(await names(dataset)).toEqual(['v000001']);
  });

  it('remove refuses the current version and removes another', async () => {
    const dataset = await mixedDataset();
    await expect(dataset.remove('v000005')).rejects.toThrow(OutputError);
    expect(await names(dataset)).toContain('v000005');
    await dataset.remove('v000002');
    expect(await names(dataset)).toEqual(['v000001', 'v000003', 'v000004', 'v000005', 'v000006']);
    expect(await readdir(dataset.root)).not.toContain('v000002');
  });
});
