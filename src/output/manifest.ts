/**
 * `_manifest.json`: the description of the current dataset, written last and atomically. Its `files`
 * list is what the dataset is, so readers, resumed runs and incremental runs agree on it even when
 * the folder holds other files. The leading `_` keeps it out of every Arrow-family reader's view
 * of the folder (pyarrow, pandas, Polars and Spark skip names starting with `_` or `.`), so
 * `pd.read_parquet(DIR)` reads the data files only.
 *
 * Money is a decimal string of US dollars with exactly 10 decimals (`costUsd: "0.1351429000"`),
 * never a binary float: it reads the same in every language and sums exactly as a decimal.
 *
 * A dataset written before the rename has `manifest.json` (version 1, `counts.cost` a number): it is
 * still read when `_manifest.json` is missing, and removed once the new manifest is written.
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import type { z } from 'zod';
import { OutputError } from '../errors.js';
import { writeFileAtomic } from './atomic.js';
import { isNotFound, messageOf } from './fs-errors.js';
import type { ManifestSchemas } from './manifest-schema.js';
import type { Manifest, ManifestV1 } from './manifest-types.js';

export type {
  FileDigest,
  Manifest,
  ManifestContract,
  ManifestCounts,
  ManifestDataset,
  ManifestGateway,
  ManifestInput,
  ManifestTranscription,
  ManifestV1,
} from './manifest-types.js';

export const MANIFEST_FILE = '_manifest.json';
/** The manifest's name before version 2 (read when MANIFEST_FILE is missing, removed when it is written). */
export const LEGACY_MANIFEST_FILE = 'manifest.json';

/** Decimals of every `costUsd` string. */
export const USD_DECIMALS = 10;

/** Dollars as the manifest stores them: a decimal string with exactly USD_DECIMALS decimals. */
export function formatUsd(dollars: number): string {
  if (!Number.isFinite(dollars) || dollars < 0 || dollars >= 1e15) {
    throw new OutputError(`manifest: ${dollars} is not an amount of dollars`);
  }
  return dollars.toFixed(USD_DECIMALS);
}

/**
 * A base URL as the manifest may keep it: no `user:password@`, no query string, no fragment (they
 * can carry credentials). An unparseable URL keeps only what precedes any `?` or `#`, less any
 * `…@` before the host.
 */
export function redactBaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    parsed.search = '';
    parsed.hash = '';
    return parsed.toString();
  } catch {
    return url.replace(/[?#].*$/s, '').replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^/@]*@/i, '$1');
  }
}

let loaded: Promise<ManifestSchemas> | undefined;
/**
 * The manifest schemas, with zod, loaded on first use (start-up time a first run does not need:
 * docs/benchmarks.md, "Design figures").
 */
function schemas(): Promise<ManifestSchemas> {
  loaded ??= import('./manifest-schema.js').then(({ manifestSchemas }) => manifestSchemas(USD_DECIMALS));
  return loaded;
}

/** `value` with every numeric `cost` field (at any depth) replaced by a `costUsd` decimal string. */
export function withDecimalCosts(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withDecimalCosts);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key === 'cost' && typeof inner === 'number') out['costUsd'] = formatUsd(inner);
    else out[key] = withDecimalCosts(inner);
  }
  return out;
}

/**
 * Writes `dir/_manifest.json` atomically (with `files` sorted, costs in `plan` as decimal strings),
 * then removes a `manifest.json` of the previous version. Call it after every data file is in place.
 */
export async function writeManifest(dir: string, manifest: Manifest): Promise<void> {
  for (const file of manifest.files) {
    if (file === '' || isAbsolute(file) || file.split(/[\\/]/).includes('..')) {
      throw new OutputError(`manifest: file ${JSON.stringify(file)} is not a path inside the output folder`);
    }
  }
  const checked = (await schemas()).manifest.safeParse(manifest);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new OutputError(
      `manifest: ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'} (a bug: please report it)`,
    );
  }
  const sorted: Manifest = {
    ...manifest,
    plan: withDecimalCosts(manifest.plan) as Record<string, unknown>,
    files: [...manifest.files].sort(),
  };
  try {
    await mkdir(dir, { recursive: true });
  } catch (error) {
    throw new OutputError(`cannot create ${dir}: ${messageOf(error)}`, { cause: error });
  }
  await writeFileAtomic(join(dir, MANIFEST_FILE), `${JSON.stringify(sorted, null, 2)}\n`);
  const legacy = join(dir, LEGACY_MANIFEST_FILE);
  try {
    await rm(legacy, { force: true });
  } catch (error) {
    throw new OutputError(`cannot remove ${legacy}: ${messageOf(error)}`, { cause: error });
  }
}

/**
 * The manifest in `dir` (`_manifest.json`, or a previous version's `manifest.json` when that is
 * missing), or undefined when there is none. A manifest that is not valid throws OutputError.
 */
export async function readManifest(dir: string): Promise<Manifest | ManifestV1 | undefined> {
  const current = await readJson(join(dir, MANIFEST_FILE));
  if (current) return parse(current, (await schemas()).manifest);
  const legacy = await readJson(join(dir, LEGACY_MANIFEST_FILE));
  return legacy ? parse(legacy, (await schemas()).manifestV1) : undefined;
}

async function readJson(path: string): Promise<{ path: string; json: unknown } | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw new OutputError(`cannot read ${path}: ${messageOf(error)}`, { cause: error });
  }
  try {
    return { path, json: JSON.parse(text) };
  } catch (error) {
    throw new OutputError(`${path}: not valid JSON (${messageOf(error)})`, { cause: error });
  }
}

function parse<T>({ path, json }: { path: string; json: unknown }, schema: z.ZodType<T>): T {
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || '(root)';
    throw new OutputError(`${path}: not an embedpipe manifest (${where}: ${issue?.message ?? 'invalid'})`);
  }
  return parsed.data;
}
