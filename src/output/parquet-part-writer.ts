/**
 * A part's Parquet file written by embedpipe: one row group, the columns in schema order
 * (design.md, "Output"), PLAIN pages, snappy or none (the vectors and content hashes, which snappy
 * does not shrink, always none), the footer with the run's key-value metadata and the Arrow schema
 * readers restore types from. What parquet-wasm writes of the same rows with parquet.ts's
 * settings, without handing the rows to it through Arrow IPC: that hand-over and the Rust writer's
 * per-value work were most of a part's encode (docs/benchmarks.md, "a ninth session").
 *
 * The quantized vector columns (`--vector-type`) are not written here: a part with any goes through
 * parquet-wasm whole, as zstd and lz4 parts do.
 */
import { Table, tableToIPC } from 'apache-arrow';
import { concatenated } from '../concatenated.js';
import { TOOL } from '../version.js';
import type { ChunkCodec } from './parquet-flat-column.js';
import {
  int32ColumnChunk,
  int32SchemaElement,
  utf8ColumnChunk,
  utf8SchemaElement,
} from './parquet-flat-column.js';
import { type ColumnChunkBytes, columnChunk, UNCOMPRESSED, utf8 } from './parquet-format.js';
import { vectorColumnChunk, vectorSchemaElements } from './parquet-vector-column.js';
import type { PartRows } from './rows.js';
import { IMAGE_COLUMNS, partSchema } from './table.js';
import { struct, type ThriftStruct, WireType, writeStruct } from './thrift-compact.js';

const MAGIC = Buffer.from('PAR1', 'ascii');
/** Pages stored uncompressed, whatever the part's codec. */
const AS_THEY_ARE: ChunkCodec = { id: UNCOMPRESSED };

/** The file as pieces to write in order (the vectors are views of `rows.vectorRuns`, not copies). */
export function writeParquetPart(
  rows: PartRows,
  metadata: Record<string, string>,
  codec: ChunkCodec,
): Uint8Array[] {
  const images = rows.images;
  const chunks: ColumnChunkBytes[] = [
    utf8ColumnChunk('id', rows.ids, codec, { nullable: false, statistics: true }),
    int32ColumnChunk('chunk_index', rows.chunkIndex, codec, { statistics: true }),
    utf8ColumnChunk('text', rows.texts, codec, { nullable: false, statistics: false }),
    vectorColumnChunk({ name: 'embedding', runs: rows.vectorRuns, dims: rows.dims, rows: rows.ids.length }),
    int32ColumnChunk('tokens', rows.tokens, codec, { statistics: true }),
    // Hex digests: snappy finds nothing to shrink there (ratio 0.999), so it is not asked to.
    utf8ColumnChunk('content_hash', rows.hashes, AS_THEY_ARE, { nullable: false, statistics: false }),
  ];
  const schema: ThriftStruct[] = [
    utf8SchemaElement('id', false),
    int32SchemaElement('chunk_index'),
    utf8SchemaElement('text', false),
    ...vectorSchemaElements('embedding'),
    int32SchemaElement('tokens'),
    utf8SchemaElement('content_hash', false),
  ];
  if (images) {
    const [source, sha256] = IMAGE_COLUMNS;
    chunks.push(
      utf8ColumnChunk(source, images.sources, codec, { nullable: true, statistics: false }),
      utf8ColumnChunk(sha256, images.hashes, codec, { nullable: true, statistics: false }),
    );
    schema.push(utf8SchemaElement(source, true), utf8SchemaElement(sha256, true));
  }
  const fields = 6 + (images ? IMAGE_COLUMNS.length : 0);

  const columns: ThriftStruct[] = [];
  let offset = MAGIC.length;
  for (const chunk of chunks) {
    columns.push(columnChunk(chunk, offset));
    offset += chunk.compressedBytes;
  }
  const sum = (key: 'compressedBytes' | 'uncompressedBytes') => chunks.reduce((s, c) => s + c[key], 0);
  const keyValues = Object.entries({
    ...metadata,
    'ARROW:schema': arrowSchemaOf(rows, metadata),
  }).map(([key, value]) => struct([1, WireType.Binary, utf8(key)], [2, WireType.Binary, utf8(value)]));
  const footer = writeStruct(
    struct(
      [1, WireType.I32, 1],
      [
        2,
        WireType.List,
        {
          elementType: WireType.Struct,
          items: [struct([4, WireType.Binary, utf8('arrow_schema')], [5, WireType.I32, fields]), ...schema],
        },
      ],
      [3, WireType.I64, BigInt(rows.ids.length)],
      [
        4,
        WireType.List,
        {
          elementType: WireType.Struct,
          items: [
            struct(
              [1, WireType.List, { elementType: WireType.Struct, items: columns }],
              [2, WireType.I64, BigInt(sum('uncompressedBytes'))],
              [3, WireType.I64, BigInt(rows.ids.length)],
              [5, WireType.I64, BigInt(MAGIC.length)],
              [6, WireType.I64, BigInt(sum('compressedBytes'))],
              [7, WireType.I16, 0],
            ),
          ],
        },
      ],
      [5, WireType.List, { elementType: WireType.Struct, items: keyValues }],
      [6, WireType.Binary, utf8(`${TOOL.name} version ${TOOL.version}`)],
      // Every leaf in its type's own order (UTF-8 by unsigned bytes): without it, readers such as
      // pyarrow take string min/max for the old signed-order kind and ignore them.
      [
        7,
        WireType.List,
        { elementType: WireType.Struct, items: chunks.map(() => struct([1, WireType.Struct, struct()])) },
      ],
    ),
  );
  const tail = Buffer.allocUnsafe(footer.length + 8);
  tail.set(footer, 0);
  tail.writeUInt32LE(footer.length, footer.length);
  tail.set(MAGIC, footer.length + 4);
  return [MAGIC, ...concatenated(chunks, (chunk) => chunk.pieces), tail];
}

/**
 * The `ARROW:schema` value Arrow writers put in a Parquet file's metadata, so that readers get the
 * Arrow types back (fixed_size_list, not list): base64 of the IPC schema message, with its
 * continuation marker and length, as the first message of an IPC stream has it. (It carries the
 * part's metadata, its batch records among them: one per part.)
 */
function arrowSchemaOf(rows: PartRows, metadata: Record<string, string>): string {
  const stream = tableToIPC(
    new Table(partSchema(rows.dims, metadata, rows.images !== undefined, [])),
    'stream',
  );
  const length = new DataView(stream.buffer, stream.byteOffset + 4, 4).getInt32(0, true);
  return Buffer.from(stream.buffer, stream.byteOffset, 8 + length).toString('base64');
}
