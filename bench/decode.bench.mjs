// CPU milliseconds per 1,000 vectors (dims 1536) from gateway response to Parquet bytes: the body
// as it comes off the socket, JSON.parse, decode and checks, columns, Parquet encode. Float JSON
// against base64. `npm run build && node bench/decode.bench.mjs`
import { embeddingFor } from '../dist/emulator/index.js';
import { decodeEmbeddings } from '../dist/gateway/decode.js';
import { encodeParquet, partRowsFromBatch } from '../dist/output/index.js';

const DIMS = 1536;
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
