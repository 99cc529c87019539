/**
 * `embedpipe verify`: a complete version against the contract, from its own files (fast: the ids,
 * chunk indices and content hashes, the manifest and `_documents.jsonl`); `deep` also reads every
 * text and vector: each content_hash recomputed from its model and text (and image), each vector of
 * the dataset's dims and finite (of unit length, with `--dims`), each quantized column
 * (`--vector-type`) what its embedding rounds to. The same fast check runs at every switch.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Table, Vector } from 'apache-arrow';
import pLimit from 'p-limit';
import { contentHash, imageContentHash } from '../content-hash.js';
import {
  binaryBytes,
  float16Bits,
  float16Value,
  formOfPlan,
  int8Scale,
  packSigns,
  toInt8,
  type VectorType,
} from '../embedding/vector-form.js';
import { allFinite } from '../finite.js';
import { readColumns, utf8Values } from './columns.js';
import { parseCompactedFileName } from './compacted-file.js';
import {
  type ContractViolation,
  checkRows,
  DatasetRows,
  type DocumentDigest,
  failedChunks,
  parseDocumentLines,
  rowsDigest,
  VersionDigest,
  Violations,
  versionDigestOf,
} from './contract.js';
import { parsePartFileName } from './dataset.js';
import { readDocumentRecords } from './documents-file.js';
import { isNotFound, messageOf } from './fs-errors.js';
import { sha256File } from './input-digest.js';
import { DOCUMENTS_FILE, FAILURES_FILE } from './jsonl.js';
import { type FileDigest, type Manifest, type ManifestV1, readManifest } from './manifest.js';
import type { OutputFormat } from './part-file.js';
import { hashedImage, readRowKeys } from './row-keys.js';
import {
  EMBEDDING_COLUMN,
  HASH_COLUMN,
  ID_COLUMN,
  IMAGE_COLUMNS,
  INDEX_COLUMN,
  VECTOR_TYPE_COLUMNS,
} from './table.js';

export interface VerifyOptions {
  /** The version's folder. */
  readonly dir: string;
  readonly deep?: boolean;
  /**
   * The rows as the switch just checked them against the plan and digested them into
   * `_documents.jsonl`: used when every listed file is counted. Their per-row rules are not checked
   * again (nor a row read); what is on disk is (the manifest against the files,
   * `_documents.jsonl` against the manifest's sha256 of it).
   */
  readonly counted?: CountedRows;
}

/** A version's rows as its switch counted them. */
export interface CountedRows {
  /** Rows per data file. */
  readonly fileRows: ReadonlyMap<string, number>;
  readonly rows: number;
  readonly documents: number;
}

export interface VerifyReport {
  readonly dir: string;
  readonly model?: string;
  readonly dims?: number;
  readonly format?: OutputFormat;
  /** The files checked, in dataset order, with their rows. */
  readonly files: readonly { readonly file: string; readonly rows: number }[];
  readonly rows: number;
  readonly documents: number;
  readonly deep: boolean;
  /**
   * How the rows were checked: against the sums the switch recorded, a file at a time (constant
   * memory), or grouped by document (every row held; what names the ids of a broken version).
   */
  readonly checked?: 'by digest' | 'row by row';
  readonly violations: readonly ContractViolation[];
}

/** Row-key reads in flight: each mostly waits on the file system. */
const READS_IN_FLIGHT = 8;

export async function verifyVersion(options: VerifyOptions): Promise<VerifyReport> {
  const { dir } = options;
  const violations: ContractViolation[] = [];
  const manifest = await readManifest(dir);
  const base = { dir, deep: options.deep === true };
  if (!manifest) {
    return {
      ...base,
      files: [],
      rows: 0,
      documents: 0,
      violations: [
        {
          check: 'manifest',
          message: `${dir} has no manifest: an unfinished version (a run builds or resumes it)`,
          ids: [],
        },
      ],
    };
  }
  const format = manifest.format;
  const present = new Set(
    (await readdir(dir)).filter(
      (name) => (parsePartFileName(name) ?? parseCompactedFileName(name)) !== undefined,
    ),
  );
  const listed = new Set(manifest.files);
  const unlisted = [...present].filter((name) => !listed.has(name)).sort();
  const absent = [...listed].filter((name) => !present.has(name)).sort();
  if (unlisted.length > 0)
    violations.push(
      fileViolation(`data files the manifest does not list (readers of the folder read them)`, unlisted),
    );
  if (absent.length > 0) violations.push(fileViolation('files the manifest lists that are missing', absent));

  const files = manifest.files.filter((name) => present.has(name));
  const recordedFiles = manifest.version === 2 ? manifest.contract?.fileDigests : undefined;
  // (At a switch the sizes were recorded a moment ago from the same files: nothing to compare.)
  if (recordedFiles && !options.counted)
    violations.push(...(await fileSizeViolations(dir, files, recordedFiles)));
  // Each file's rows as read here: checked against what the switch recorded of them.
  const digests = new Map<string, VersionDigest>();
  // Counted by the switch, or rows that sum to what the switch recorded (read a file at a time).
  const counted =
    options.counted ??
    (manifest.version === 2 ? await countedAgainstRecord(dir, files, manifest, digests) : undefined);
  const checked = counted !== undefined && files.every((file) => counted.fileRows.has(file));
  const limit = pLimit(READS_IN_FLIGHT);
  const scans = checked
    ? []
    : await Promise.all(files.map((file) => limit(() => readRowKeys(dir, file, format))));
  for (const scan of scans) digests.set(scan.file, versionDigestOf(scan));
  if (recordedFiles) violations.push(...fileDigestViolations(digests, recordedFiles));
  // Grouped by document only when the rows are checked here (not counted by the switch).
  const grouped = checked ? undefined : new DatasetRows(scans);
  const rows: { readonly rows: number; readonly documents: number } = grouped ?? counted!;
  if (manifest.counts.rows !== rows.rows)
    violations.push({
      check: 'manifest',
      message: `the manifest counts ${manifest.counts.rows} rows, the files hold ${rows.rows}`,
      ids: [],
    });
  // Rows that summed to the record were read against it already (its sha256 included).
  const summed = checked && options.counted === undefined;
  const recorded = summed
    ? undefined
    : await recordedDocuments(dir, manifest, violations, { parse: !checked });
  if (grouped) {
    violations.push(
      ...checkRows({
        rows: grouped,
        dims: manifest.dims,
        failed: failedChunks(await readFailures(dir)),
        ...(recorded ? { recorded } : {}),
      }),
    );
  }
  if (options.deep) violations.push(...(await deepCheck(dir, files, manifest)));
  return {
    ...base,
    model: manifest.model,
    dims: manifest.dims,
    format,
    files: checked
      ? files.map((file) => ({ file, rows: counted?.fileRows.get(file) ?? 0 }))
      : scans.map((scan) => ({ file: scan.file, rows: scan.ids.length })),
    rows: rows.rows,
    documents: rows.documents,
    checked: grouped ? 'row by row' : 'by digest',
    violations,
  };
}

/**
 * The version's rows checked against `_documents.jsonl` in constant memory, where they agree: the
 * sum over every file's rows (one file's keys read at a time) of the version digest
 * (contract.ts VersionDigest) equals the same sum over the recorded documents, and so do the row
 * and document counts, the sha256 the manifest records, and every file's dims. Undefined when
 * anything differs: the grouped check, which holds every row, then names what. Each file's digest
 * is left in `digests`.
 */
async function countedAgainstRecord(
  dir: string,
  files: readonly string[],
  manifest: Manifest,
  digests: Map<string, VersionDigest>,
): Promise<CountedRows | undefined> {
  const { contract } = manifest;
  // A version switched before the contract existed has no record to sum against.
  if (!contract) return undefined;
  const recorded = await recordedSums(join(dir, DOCUMENTS_FILE)).catch(() => undefined);
  if (!recorded || recorded.sha256 !== contract.documentsSha256) return undefined;
  if (recorded.documents !== contract.documents) return undefined;
  const rows = new VersionDigest();
  const fileRows = new Map<string, number>();
  for (const file of files) {
    const scan = await readRowKeys(dir, file, manifest.format);
    if (manifest.dims > 0 && scan.dims !== manifest.dims) return undefined;
    const digest = versionDigestOf(scan);
    digests.set(file, digest);
    rows.addDigest(digest);
    fileRows.set(file, scan.ids.length);
  }
  if (!rows.equals(recorded.digest) || rows.rows !== manifest.counts.rows) return undefined;
  return { fileRows, rows: rows.rows, documents: recorded.documents };
}

/** `_documents.jsonl` read a piece at a time: its sha256, its documents' version digest and count. */
async function recordedSums(
  path: string,
): Promise<{ sha256: string; digest: VersionDigest; documents: number }> {
  const hash = createHash('sha256');
  const digest = new VersionDigest();
  let documents = 0;
  for await (const records of readDocumentRecords(path, (bytes) => hash.update(bytes))) {
    for (const { id, rows, digest: hex } of records) digest.addRecorded(id, { rows, digest: hex });
    documents += records.length;
  }
  return { sha256: hash.digest('hex'), digest, documents };
}

/**
 * Files whose size is not the one their switch recorded, or that it did not record: changed since
 * (a later version linking them would otherwise sum the record instead of reading them).
 */
async function fileSizeViolations(
  dir: string,
  files: readonly string[],
  recorded: Readonly<Record<string, FileDigest>>,
): Promise<ContractViolation[]> {
  const violations = new Violations();
  const sizes = await Promise.all(files.map(async (file) => (await stat(join(dir, file))).size));
  files.forEach((file, i) => {
    const record = recorded[file];
    if (!record) violations.add('manifest', "data files the manifest's contract records no digest of", file);
    else if (record.bytes !== sizes[i])
      violations.add(
        'manifest',
        'data files whose size is not the one the switch recorded (changed since)',
        file,
        `${sizes[i]} bytes, recorded ${record.bytes}`,
      );
  });
  return violations.list();
}

/** Files whose rows (as read here) are not the ones the switch recorded. */
function fileDigestViolations(
  digests: ReadonlyMap<string, VersionDigest>,
  recorded: Readonly<Record<string, FileDigest>>,
): ContractViolation[] {
  const violations = new Violations();
  for (const [file, digest] of digests) {
    const record = recorded[file];
    if (record && !digest.equals(VersionDigest.fromRecord(record)))
      violations.add(
        'manifest',
        'data files whose rows are not the ones the switch recorded (changed since)',
        file,
        `${digest.rows} rows, recorded ${record.rows}`,
      );
  }
  return violations.list();
}

function fileViolation(what: string, files: readonly string[]): ContractViolation {
  const violations = new Violations();
  for (const file of files) violations.add('manifest', what, file);
  return violations.list()[0]!;
}

/** The digests the switch recorded, checked against the manifest's sha256 of them. */
async function recordedDocuments(
  dir: string,
  manifest: Manifest | ManifestV1,
  violations: ContractViolation[],
  { parse = true } = {},
): Promise<Map<string, DocumentDigest> | undefined> {
  const contract = manifest.version === 2 ? manifest.contract : undefined;
  // A version switched before the contract existed: its rows are checked for their own rules only.
  if (!contract) return undefined;
  // Hashed a piece at a time; read whole only when its lines are compared.
  let text: string | undefined;
  let sha256: string;
  try {
    if (parse) {
      text = await readFile(join(dir, DOCUMENTS_FILE), 'utf8');
      sha256 = rowsDigest(text);
    } else sha256 = (await sha256File(join(dir, DOCUMENTS_FILE))).sha256;
  } catch (error) {
    violations.push({
      check: 'manifest',
      message: `cannot read ${DOCUMENTS_FILE}: ${messageOf(error)}`,
      ids: [],
    });
    return undefined;
  }
  if (sha256 !== contract.documentsSha256) {
    violations.push({
      check: 'manifest',
      message: `${DOCUMENTS_FILE} is not the one the manifest records (its sha256 differs)`,
      ids: [],
    });
    return undefined;
  }
  return text !== undefined ? parseDocumentLines(text) : undefined;
}

async function readFailures(dir: string): Promise<{ documentId: string; chunkIndex?: number }[]> {
  let text: string;
  try {
    text = await readFile(join(dir, FAILURES_FILE), 'utf8');
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as { documentId: string; chunkIndex?: number });
}

/** Every row's content_hash from its model and text (and image), every vector's length and values. */
async function deepCheck(
  dir: string,
  files: readonly string[],
  manifest: Manifest | ManifestV1,
): Promise<ContractViolation[]> {
  const violations = new Violations();
  const badHash = 'rows whose content_hash is not the hash of their model and text';
  const badVector = `rows whose vector is not ${manifest.dims} finite numbers`;
  const form = formOfPlan(manifest.plan);
  const badNorm = `rows whose vector is not of unit length (--dims ${form.dims} re-normalises)`;
  const badQuantized = 'rows whose quantized column is not what their embedding rounds to';
  const quantizedColumns = form.types.flatMap((type) => VECTOR_TYPE_COLUMNS[type]);
  for (const file of files) {
    // (A dataset without images has no image columns: the reader leaves out the names it lacks.)
    const table = await readColumns(join(dir, file), manifest.format, [
      ID_COLUMN,
      INDEX_COLUMN,
      'text',
      HASH_COLUMN,
      EMBEDDING_COLUMN,
      ...IMAGE_COLUMNS,
      ...quantizedColumns,
    ]);
    const ids = utf8Values(table.getChild(ID_COLUMN)!);
    const indices = table.getChild(INDEX_COLUMN)!;
    const texts = utf8Values(table.getChild('text')!);
    const stored = utf8Values(table.getChild(HASH_COLUMN)!);
    const sources = table.getChild(IMAGE_COLUMNS[0]);
    const shas = table.getChild(IMAGE_COLUMNS[1]);
    const rowVectors = vectorsOf(table.getChild(EMBEDDING_COLUMN)!);
    for (let row = 0; row < ids.length; row++) {
      const where = `chunk_index ${indices.get(row)} in ${file}`;
      const image = hashedImage(sources?.get(row), shas?.get(row));
      const text = texts[row]!;
      const hash = image ? imageContentHash(manifest.model, text, image) : contentHash(manifest.model, text);
      if (hash !== stored[row]) violations.add('content-hash', badHash, ids[row]!, where);
      const vector = rowVectors(row);
      if (!vector || vector.length !== manifest.dims || !allFinite(vector)) {
        violations.add('vectors', badVector, ids[row]!, where);
        continue;
      }
      if (form.dims !== undefined && Math.abs(norm(vector) - 1) > 1e-3)
        violations.add('vectors', badNorm, ids[row]!, where);
      for (const type of form.types) {
        if (!quantizedMatches(type, vector, table, row))
          violations.add('quantized', badQuantized, ids[row]!, `${where} (${type})`);
      }
    }
  }
  return violations.list();
}

function norm(vector: Float32Array): number {
  let sum = 0;
  for (const x of vector) sum += x * x;
  return Math.sqrt(sum);
}

/** Whether a row's column(s) of a vector type hold what the writer computes from `vector`. */
function quantizedMatches(type: VectorType, vector: Float32Array, table: Table, row: number): boolean {
  const [name, scaleName] = VECTOR_TYPE_COLUMNS[type];
  const stored = table.getChild(name!)?.get(row) as { toArray?: () => ArrayLike<number> } | Uint8Array | null;
  if (stored === null || stored === undefined) return false;
  const values = stored instanceof Uint8Array ? stored : stored.toArray?.();
  if (values === undefined) return false;
  const dims = vector.length;
  switch (type) {
    case 'float16': {
      // A reader may hand the column back as float16 bits or widened to numbers.
      if (values.length !== dims) return false;
      const bits = values instanceof Uint16Array;
      for (let j = 0; j < dims; j++) {
        const expected = float16Bits(vector[j]!);
        if (bits ? values[j] !== expected : values[j] !== float16Value(expected)) return false;
      }
      return true;
    }
    case 'int8': {
      const scale = int8Scale(vector);
      if (values.length !== dims || table.getChild(scaleName!)?.get(row) !== Math.fround(scale)) return false;
      for (let j = 0; j < dims; j++) if (values[j] !== toInt8(vector[j]!, scale)) return false;
      return true;
    }
    case 'binary': {
      const expected = new Uint8Array(binaryBytes(dims));
      packSigns(vector, 0, dims, expected, 0);
      return values.length === expected.length && expected.every((byte, i) => values[i] === byte);
    }
  }
}

/** Row → its vector as a view of the column's values (undefined for a null or a column of another type). */
function vectorsOf(column: Vector): (row: number) => Float32Array | undefined {
  const views: (Float32Array | undefined)[] = [];
  for (const data of column.data) {
    const size = (data.type as { listSize?: number }).listSize;
    const values = data.children[0]?.values;
    const first = data.children[0]?.offset ?? 0;
    for (let i = 0; i < data.length; i++) {
      const valid = data.nullCount === 0 || data.getValid(i);
      views.push(
        valid && size !== undefined && values instanceof Float32Array
          ? values.subarray((data.offset + i) * size + first, (data.offset + i + 1) * size + first)
          : undefined,
      );
    }
  }
  return (row) => views[row];
}
