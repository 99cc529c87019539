// The reference client of the throughput benchmark, in its own process so that its whole-process
// CPU is measured like embedpipe's: the openai SDK with a p-limit pool of C requests of B inputs,
// sending a JSONL corpus's texts as they are (one text, one input; no planning, no files). The SDK
// asks for base64 and decodes each vector into numbers, as its users get them.
// `node bench/reference-client.mjs CORPUS MODEL CONCURRENCY INPUTS` with EMBEDPIPE_BASE_URL and
// EMBEDPIPE_API_KEY set; prints one JSON line: {"vectors", "sendingMs"}.
import { readFile } from 'node:fs/promises';
import OpenAI from 'openai';
import pLimit from 'p-limit';

const [corpus, model, concurrency, inputs] = process.argv.slice(2);
const client = new OpenAI({
  baseURL: process.env.EMBEDPIPE_BASE_URL,
  apiKey: process.env.EMBEDPIPE_API_KEY,
  maxRetries: 2,
});
const texts = (await readFile(corpus, 'utf8'))
  .split('\n')
  .filter(Boolean)
  .map((line) => JSON.parse(line).text);
const limit = pLimit(Number(concurrency));
const size = Number(inputs);
const started = performance.now();
const batches = [];
for (let i = 0; i < texts.length; i += size) {
  const input = texts.slice(i, i + size);
  batches.push(limit(async () => (await client.embeddings.create({ model, input })).data.length));
}
const vectors = (await Promise.all(batches)).reduce((a, b) => a + b, 0);
process.stdout.write(`${JSON.stringify({ vectors, sendingMs: performance.now() - started })}\n`);
