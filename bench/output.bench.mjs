// Vector writer benchmark: CPU ms per 1,000 vectors and bytes per vector, 1536 dims, 128 rows per
// part (one part = one batch). Run after `npx tsc -p tsconfig.build.json`:
//   node bench/output.bench.mjs [--parts N] [--json]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { wasmMemory } from 'parquet-wasm';
import {
  DatasetWriter,
  encodeArrowIpcFile,
  encodeParquet,
  parquetRowCount,
  partRowsFromBatch,
  writeFileAtomic,
} from '../dist/output/index.js';

const DIMS = 1536;
const ROWS_PER_PART = 128;
// ~600 characters of text per row, drawn from a vocabulary so it compresses like prose, not like a repeat.
const WORDS =
  'the of and to in is that for it as was with be by on not he this are or his from at which but have an they you were her she there been one all we their has would when if so no will can more other its into also time only some could new these two may first then do any like my now over such our man me even most made after'.split(
    ' ',
  );

/** Unit-length Gaussian vectors, like a real embedding model's (values around ±0.025). */
function makeBatch(batchId, seed) {
  let s = seed >>> 0;
  const rand = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s + 0.5) / 4294967296;
  };
  const chunks = [];
  const vectors = [];
  for (let i = 0; i < ROWS_PER_PART; i++) {
    const text = Array.from({ length: 100 }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');
    chunks.push({
      documentId: `doc-${seed}-${i >> 2}`,
      index: i & 3,
      text,
      start: 0,
      end: text.length,
      tokens: 300,
      hash: (seed * 1000 + i).toString(16).padStart(64, '0'),
    });
    const v = new Float32Array(DIMS);
    let norm = 0;
    for (let j = 0; j < DIMS; j++) {
      const g = Math.sqrt(-2 * Math.log(rand())) * Math.cos(2 * Math.PI * rand());
      v[j] = g;
      norm += g * g;
    }
    norm = Math.sqrt(norm);
    for (let j = 0; j < DIMS; j++) v[j] /= norm;
    vectors.push(v);
  }
  return {
    batchId,
    model: 'bench/model',
    chunks,
    vectors,
    failures: [],
    usage: { promptTokens: 0, cost: 0, requests: 1, retries: 0 },
  };
}

const cpuMs = (since) => {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1000;
};

/**
 * Runs `fn` on every part twice and reports the second pass per 1,000 vectors: the first pass lets
 * V8 tier the wasm encoder up (the first ~40 parts run about 2.5x slower).
 */
async function measure(name, parts, fn) {
  for (const part of parts) await fn(part);
  let bytes = 0;
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  for (const part of parts) bytes += (await fn(part)) ?? 0;
  const vectors = parts.length * ROWS_PER_PART;
  return {
    name,
    cpuMsPer1kVectors: +((cpuMs(cpu0) * 1000) / vectors).toFixed(1),
    wallMsPer1kVectors: +(((performance.now() - wall0) * 1000) / vectors).toFixed(1),
    bytesPerVector: bytes ? Math.round(bytes / vectors) : undefined,
  };
}

export async function runOutputBench({ parts: partCount = 40 } = {}) {
  const batches = Array.from({ length: partCount }, (_, i) => makeBatch(`b${i}`, i + 1));
  const rows = batches.map((b) => partRowsFromBatch(b));
  const metadata = { 'embedpipe.model': 'bench/model', 'embedpipe.dims': String(DIMS) };
  const results = [];
  results.push(
    await measure('partRowsFromBatch (copy)', batches, (b) => {
      partRowsFromBatch(b);
    }),
  );
  for (const compression of ['none', 'snappy', 'lz4', 'zstd']) {
    results.push(
      await measure(
        `encodeParquet ${compression}`,
        rows,
        (r) => encodeParquet(r, metadata, { compression }).byteLength,
      ),
    );
  }
  results.push(await measure('encodeArrowIpcFile', rows, (r) => encodeArrowIpcFile(r, metadata).byteLength));

  const dir = await mkdtemp(join(tmpdir(), 'embedpipe-bench-'));
  try {
    const encoded = rows.map((r) => encodeParquet(r, metadata));
    let k = 0;
    results.push(
      await measure('writeFileAtomic of a parquet part (write+fsync+rename)', encoded, async (bytes) => {
        await writeFileAtomic(join(dir, `f${k++ % 4}.parquet`), bytes);
        return bytes.byteLength;
      }),
    );
    let f = 0;
    results.push(
      await measure('parquetRowCount of a written part (the check before the rename)', encoded, async () => {
        await parquetRowCount(join(dir, `f${f++ % 4}.parquet`));
        return 0;
      }),
    );
    for (const format of ['parquet', 'arrow']) {
      const writer = new DatasetWriter({ dir: join(dir, format), format, metadata, dims: DIMS });
      results.push(
        await measure(`DatasetWriter.writePart ${format} (encode+check+fsync)`, batches, async (b) => {
          return (await writer.writePart(b.batchId, b)).bytes;
        }),
      );
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return {
    dims: DIMS,
    rowsPerPart: ROWS_PER_PART,
    parts: partCount,
    rawBytesPerVector: DIMS * 4,
    wasmMemoryBytes: wasmMemory().buffer.byteLength,
    results,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const partsAt = args.indexOf('--parts');
  const report = await runOutputBench(partsAt >= 0 ? { parts: Number(args[partsAt + 1]) } : {});
  if (args.includes('--json')) {
    console.log(JSON.stringify(report));
  } else {
    console.log(
      `output bench: ${report.parts} parts x ${report.rowsPerPart} rows, dims ${report.dims} (raw ${report.rawBytesPerVector} B/vector), wasm memory ${(report.wasmMemoryBytes / 2 ** 20).toFixed(1)} MiB`,
    );
    console.table(report.results);
  }
}
