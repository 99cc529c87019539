/**
 * `manifest.json`: the description of the current dataset, written last and atomically. Its `files`
 * list is what the dataset is, so readers, resumed runs and incremental runs agree on it even when
 * the folder holds other files.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { z } from 'zod';
import { OutputError } from '../errors.js';
import { writeFileAtomic } from './atomic.js';
import { isNotFound, messageOf } from './fs-errors.js';

export const MANIFEST_FILE = 'manifest.json';

export interface ManifestCounts {
  readonly documents: number;
  readonly chunks: number;
  /** Rows in the part files (chunks that got a vector). */
  readonly rows: number;
  readonly rejects: number;
  readonly failures: number;
  /** Prompt tokens the gateway reported for the dataset's batches (what was paid for, whichever run). */
  readonly tokens: number;
  readonly cost: number;
  readonly requests: number;
  readonly retries: number;
}

export interface Manifest {
  readonly version: 1;
  readonly tool: { readonly name: string; readonly version: string };
  /** ISO 8601. */
  readonly createdAt: string;
  readonly model: string;
  readonly dims: number;
  readonly format: 'parquet' | 'arrow';
  readonly providers: readonly string[];
  /** The plan parameters that determine batch ids (max tokens, overlap, max inputs, …). */
  readonly plan: Readonly<Record<string, unknown>>;
  readonly counts: ManifestCounts;
  /** Part files of the dataset, relative to the output folder, sorted. */
  readonly files: readonly string[];
}

const count = z.number().nonnegative();

const manifestSchema = z.object({
  version: z.literal(1),
  tool: z.object({ name: z.string(), version: z.string() }),
  createdAt: z.string(),
  model: z.string(),
  dims: z.number().int().nonnegative(),
  format: z.enum(['parquet', 'arrow']),
  providers: z.array(z.string()),
  plan: z.record(z.string(), z.unknown()),
  counts: z.object({
    documents: count,
    chunks: count,
    rows: count,
    rejects: count,
    failures: count,
    tokens: count,
    cost: count,
    requests: count,
    retries: count,
  }),
  files: z.array(z.string()),
}) satisfies z.ZodType<Manifest>;

/** Writes `dir/manifest.json` atomically (with `files` sorted). Call it after every part is in place. */
export async function writeManifest(dir: string, manifest: Manifest): Promise<void> {
  for (const file of manifest.files) {
    if (file === '' || isAbsolute(file) || file.split(/[\\/]/).includes('..')) {
      throw new OutputError(`manifest: file ${JSON.stringify(file)} is not a path inside the output folder`);
    }
  }
  const sorted: Manifest = { ...manifest, files: [...manifest.files].sort() };
  try {
    await mkdir(dir, { recursive: true });
  } catch (error) {
    throw new OutputError(`cannot create ${dir}: ${messageOf(error)}`, { cause: error });
  }
  await writeFileAtomic(join(dir, MANIFEST_FILE), `${JSON.stringify(sorted, null, 2)}\n`);
}

/** The manifest in `dir`, or undefined when there is none. A manifest that is not valid throws OutputError. */
export async function readManifest(dir: string): Promise<Manifest | undefined> {
  const path = join(dir, MANIFEST_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw new OutputError(`cannot read ${path}: ${messageOf(error)}`, { cause: error });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new OutputError(`${path}: not valid JSON (${messageOf(error)})`, { cause: error });
  }
  const parsed = manifestSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || '(root)';
    throw new OutputError(`${path}: not an embedpipe manifest (${where}: ${issue?.message ?? 'invalid'})`);
  }
  return parsed.data;
}
