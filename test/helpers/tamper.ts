/**
 * A dataset made wrong by hand: a Parquet data file rewritten with its rows changed and its footer
 * metadata (batch map, records) kept, as an editing tool that preserves metadata would leave it. The
 * new file replaces the name (a new inode), so other versions' hard links keep the original, unless
 * it is written in place.
 */
import { rename, writeFile } from 'node:fs/promises';
import { readColumns, utf8Values } from '../../src/output/columns.js';
import { encodeParquet, parquetFileMetadata } from '../../src/output/parquet.js';
import { COLUMNS } from '../../src/output/table.js';

export interface EditableRows {
  ids: string[];
  chunkIndex: number[];
  texts: string[];
  tokens: number[];
  hashes: string[];
  vectors: Float32Array[];
}

/**
 * `inPlace`: the bytes are written into the same inode instead (an edit every hard link of the file
 * sees, as an editor that truncates and rewrites leaves it).
 */
export async function tamperParquet(
  path: string,
  edit: (rows: EditableRows) => void,
  { inPlace = false } = {},
): Promise<void> {
  const metadata = await parquetFileMetadata(path);
  const table = await readColumns(path, 'parquet', [...COLUMNS]);
  const embedding = table.getChild('embedding')!;
  const dims = (embedding.type as { listSize: number }).listSize;
  const rows: EditableRows = {
    ids: utf8Values(table.getChild('id')!),
    chunkIndex: [...(table.getChild('chunk_index')!.toArray() as Int32Array)],
    texts: utf8Values(table.getChild('text')!),
    tokens: [...(table.getChild('tokens')!.toArray() as Int32Array)],
    hashes: utf8Values(table.getChild('content_hash')!),
    vectors: Array.from({ length: table.numRows }, (_, i) =>
      Float32Array.from((embedding.get(i) as { toArray(): Float32Array }).toArray()),
    ),
  };
  edit(rows);
  const bytes = encodeParquet(
    {
      ids: rows.ids,
      chunkIndex: Int32Array.from(rows.chunkIndex),
      texts: rows.texts,
      tokens: Int32Array.from(rows.tokens),
      hashes: rows.hashes,
      vectorRuns: rows.vectors,
      dims,
    },
    metadata,
  );
  if (inPlace) return writeFile(path, bytes);
  await writeFile(`${path}.tampered`, bytes);
  await rename(`${path}.tampered`, path);
}

/** Appends a copy of row `from`, under `id` when given (a row of another document). */
export function appendCopy(rows: EditableRows, from: number, id = rows.ids[from]!): void {
  rows.ids.push(id);
  rows.chunkIndex.push(id === rows.ids[from] ? rows.chunkIndex[from]! : 0);
  rows.texts.push(rows.texts[from]!);
  rows.tokens.push(rows.tokens[from]!);
  rows.hashes.push(rows.hashes[from]!);
  rows.vectors.push(rows.vectors[from]!);
}
