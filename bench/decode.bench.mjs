// CPU milliseconds per 1,000 vectors (dims 1536, or the first argument) from gateway response to
// Parquet bytes: the body as it comes off the socket, JSON.parse, decode and checks, columns, Parquet
// encode. Float JSON against base64. Then base64 from response to a committed Parquet part: the same
// decode, then DatasetWriter.writePart (columns, encode, footer check, write, fsync, rename), what a
// run does per batch. `npm run build && node bench/decode.bench.mjs [dims]`
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULTS } from '../dist/config/defaults.js';
import { embeddingFor } from '../dist/emulator/index.js';
import { decodeEmbeddings } from '../dist/gateway/decode.js';
import { DatasetWriter, encodeParquet, partRowsFromBatch } from '../dist/output/index.js';

const DIMS = Number(process.argv[2] ?? 1536);
if (!Number.isInteger(DIMS) || DIMS < 1)
  throw new Error(`dims must be a positive integer, got ${process.argv[2]}`);
const PER_REQUEST = 128;
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 40);
const texts = Array.from(
  { length: PER_REQUEST },
  (_, i) => `document ${i} about tides, owls and sourdough bread`,
);
const vectors = texts.map((t) => embeddingFor('emu/embed-large', t, DIMS));

function body(format) {
  const data = vectors.map((v, index) => ({
    object: 'embedding',
    index,
    embedding:
      format === 'base64'
        ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')
        : Array.from(v),
  }));
  return JSON.stringify({
    object: 'list',
    model: 'emu/embed-large',
    data,
    usage: { prompt_tokens: 1000, total_tokens: 1000 },
  });
}

const chunks = texts.map((text, index) => ({
  documentId: `d${index}`,
  index: 0,
  text,
  start: 0,
  end: text.length,
  tokens: 10,
  hash: 'h'.repeat(64),
}));

function cpuMs(fn) {
  const start = process.cpuUsage();
  fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

console.log(`decode bench: dims ${DIMS}, ${PER_REQUEST} vectors per response, ${REQUESTS} responses`);
for (const format of ['float', 'base64']) {
  const text = body(format);
  let decodeMs = 0;
  let parquetMs = 0;
  for (let warm = 0; warm < 5; warm++) decodeEmbeddings(JSON.parse(text), PER_REQUEST);
  for (let r = 0; r < REQUESTS; r++) {
    let result;
    decodeMs += cpuMs(() => {
      result = decodeEmbeddings(JSON.parse(text), PER_REQUEST);
    });
    parquetMs += cpuMs(() => {
      const batch = {
        batchId: 'b',
        model: 'm',
        chunks,
        vectors: result.vectors,
        failures: [],
        usage: { promptTokens: 0, cost: 0, requests: 1, retries: 0 },
      };
      encodeParquet(partRowsFromBatch(batch), {});
    });
  }
  const per1000 = (ms) => ((ms / (REQUESTS * PER_REQUEST)) * 1000).toFixed(1);
  console.log(
    `decode: ${format.padEnd(6)} body ${(text.length / 1e6).toFixed(2)} MB per ${PER_REQUEST} vectors; CPU ms per 1,000 vectors: ` +
      `parse+decode ${per1000(decodeMs)}, columns+Parquet ${per1000(parquetMs)}, total ${per1000(decodeMs + parquetMs)}`,
  );
}

/** One base64 response decoded into the embedded batch `batchId`, as the embedder returns it. */
const decodedBatch = (text, batchId) => ({
  batchId,
  model: 'emu/embed-large',
  chunks,
  vectors: decodeEmbeddings(JSON.parse(text), PER_REQUEST).vectors,
  failures: [],
  usage: { promptTokens: 0, cost: 0, requests: 1, retries: 0 },
  replanned: [],
});

/** A Parquet dataset writer in a fresh temp folder. */
const benchWriter = (dir) =>
  new DatasetWriter({
    dir,
    format: 'parquet',
    metadata: { 'embedpipe.model': 'emu/embed-large' },
    dims: DIMS,
  });

// Response (base64) → committed part, one part per response (a file per batch).
{
  const text = body('base64');
  const dir = await mkdtemp(join(tmpdir(), 'embedpipe-bench-decode-'));
  try {
    const writer = benchWriter(dir);
    const commit = (batchId) => writer.writePart(batchId, decodedBatch(text, batchId));
    for (let warm = 0; warm < 5; warm++) await commit(`warm-${warm}`);
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    for (let r = 0; r < REQUESTS; r++) await commit(`b${r}`);
    const cpu = process.cpuUsage(cpu0);
    const wall = performance.now() - wall0;
    const per1000 = (ms) => ((ms / (REQUESTS * PER_REQUEST)) * 1000).toFixed(1);
    console.log(
      `decode: base64 response to committed Parquet part (decode + DatasetWriter.writePart: encode, check, fsync, rename), ` +
        `dims ${DIMS}, ${PER_REQUEST} vectors per part: CPU ms per 1,000 vectors ${per1000((cpu.user + cpu.system) / 1000)} ` +
        `(wall ${per1000(wall)})`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// Response (base64) → committed data file, as `run` commits: the responses' batches grouped into
// files of DEFAULTS.commit.groupBytes of vectors (DatasetWriter.writeGroup).
{
  const text = body('base64');
  const dir = await mkdtemp(join(tmpdir(), 'embedpipe-bench-group-'));
  try {
    const writer = benchWriter(dir);
    const perGroup = Math.max(1, Math.floor(DEFAULTS.commit.groupBytes / (PER_REQUEST * DIMS * 4)));
    const responses = Math.max(REQUESTS, perGroup * 3);
    const run = async (prefix, count) => {
      let group = [];
      for (let r = 0; r < count; r++) {
        const batchId = `${prefix}${r}`;
        group.push({ batchId, batch: decodedBatch(text, batchId) });
        if (group.length === perGroup || r === count - 1) {
          await writer.writeGroup(group);
          group = [];
        }
      }
    };
    await run('warm-', perGroup);
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    await run('g', responses);
    const cpu = process.cpuUsage(cpu0);
    const wall = performance.now() - wall0;
    const per1000 = (ms) => ((ms / (responses * PER_REQUEST)) * 1000).toFixed(1);
    console.log(
      `decode: base64 response to committed Parquet data file as run commits (decode + DatasetWriter.writeGroup, ` +
        `${perGroup} responses per file), dims ${DIMS}: CPU ms per 1,000 vectors ${per1000((cpu.user + cpu.system) / 1000)} ` +
        `(wall ${per1000(wall)})`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
