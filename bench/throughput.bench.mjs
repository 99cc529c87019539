// Throughput against the emulator with fixed latency: vectors per second as a ratio of the ceiling
// C × inputs-per-request / latency (what a client that never leaves a slot idle could reach).
// `npm run build && node bench/throughput.bench.mjs [latencyMs] [concurrency] [inputsPerRequest] [prose|multilingual]`
//
// prose (default): one short English document = one chunk = one input, emu/embed-small.
// multilingual: multilingual.mjs's hostile pieces (up to 1,000 code points, ~4 KB; one chunk each
// in emu/embed-large's budget), emu/embed-large (1536 dims). BENCH_MODEL overrides the model.
// Either corpus has BENCH_REQUESTS (default 400) × inputs-per-request documents. BENCH_PAIRS (default
// 1): embedpipe and the reference measured that many times each, alternating which goes first, and
// the median of the pairs' ratios reported.
//
// BENCH_PIN=1: the emulator on core 1, embedpipe on core 0; run the bench itself under
// `taskset -c 0` so the bare client shares core 0 too (npm run bench does).
//
// The reference: the openai SDK with a p-limit pool of C requests of B inputs, in its own process
// pinned like embedpipe (reference-client.mjs), sending the same documents, one input each; both
// whole-process CPU figures are exact (reaped-children times), each split into its main thread's
// (the scheduler's count, read every 10 ms) and the rest (V8's helper threads, libuv's pool). Then a
// floor: bare fetch in the bench process (base64 left undecoded; no planning, no files).
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pLimit from 'p-limit';
import { corpusOf } from './corpora.mjs';
import { API_KEY, mb, median, runEmbedpipe, runMeasured, startGateway } from './lib.mjs';

const latencyMs = Number(process.argv[2] ?? 50);
const concurrency = Number(process.argv[3] ?? 8);
const inputs = Number(process.argv[4] ?? 32);
const kind = process.argv[5] ?? 'prose';
const requests = Number(process.env.BENCH_REQUESTS ?? 400);
const pairs = Number(process.env.BENCH_PAIRS ?? 1);
if (!Number.isInteger(pairs) || pairs < 1)
  throw new Error(`BENCH_PAIRS must be a whole number ≥ 1, not ${process.env.BENCH_PAIRS}`);
let runs = 0;
const corpus = corpusOf(kind);
const model = process.env.BENCH_MODEL ?? corpus.model;

const dir = await mkdtemp(join(tmpdir(), 'embedpipe-bench-'));
const pinned = process.env.BENCH_PIN === '1';
const gateway = await startGateway(['--latency', String(latencyMs)], pinned ? ['taskset', '-c', '1'] : []);
try {
  const input = join(dir, 'corpus.jsonl');
  const { documents } = await corpus.write(input, requests * inputs);
  const { size } = await stat(input);
  const ceiling = (concurrency * inputs) / (latencyMs / 1000);
  const pct = (r) => `${((r / ceiling) * 100).toFixed(1)}%`;
  const embedpipeRuns = [];
  const sdkRuns = [];
  // Pairs alternate which client runs first: the second of a pair measured slightly faster here
  // (docs/benchmarks.md), so one order would favour one side.
  for (let pair = 0; pair < pairs; pair++) {
    const embedpipeFirst = pair % 2 === 0;
    if (!embedpipeFirst) sdkRuns.push(await referenceClient(gateway.baseUrl, input));
    const run = await measureEmbedpipe(input, size);
    embedpipeRuns.push(run);
    if (embedpipeFirst) sdkRuns.push(await referenceClient(gateway.baseUrl, input));
    const sdk = sdkRuns.at(-1);
    const { summary, rate, wallRate, cpuMsPer1k } = run;
    const label =
      pairs > 1
        ? `pair ${pair + 1} of ${pairs} (${embedpipeFirst ? 'embedpipe' : 'the SDK pool'} first): `
        : '';
    console.log(
      `throughput (${kind}, ${model}): ${label}${documents} docs (${mb(size)} MB), ${summary.rows} rows, ${summary.chunks} chunks, ` +
        `${summary.requests} requests, C=${concurrency}, ${inputs} inputs/request, ${latencyMs} ms latency: ` +
        `${rate.toFixed(0)} vectors/s of a ${ceiling.toFixed(0)} ceiling = ${pct(rate)} ` +
        `(embedding ${(summary.embeddingMs / 1000).toFixed(2)} s of ${(summary.elapsedMs / 1000).toFixed(2)} s); ` +
        `over the whole run (${(run.wallMs / 1000).toFixed(2)} s wall, spawn to exit) ${wallRate.toFixed(0)} vectors/s = ${pct(wallRate)}`,
    );
    console.log(
      `  embedpipe CPU (all threads, start-up included): ${(run.cpuMs / 1000).toFixed(2)} s = ${cpuMsPer1k.toFixed(1)} ms per 1,000 vectors ` +
        `(main thread ${run.mainMsPer1k.toFixed(1)}, other threads ${(cpuMsPer1k - run.mainMsPer1k).toFixed(1)}); ` +
        `${run.mbPerS.toFixed(2)} MB/s of corpus over the whole run; peak RSS ${run.peakMb.toFixed(0)} MB${pinned ? '; pinned: emulator core 1, client core 0' : ''}`,
    );
    console.log(
      `  reference: openai SDK + p-limit pool, own process${pinned ? ' on core 0' : ''}: ${sdk.rate.toFixed(0)} vectors/s while sending = ${pct(sdk.rate)}, ` +
        `${sdk.wallRate.toFixed(0)}/s spawn to exit; ${sdk.cpuMsPer1k.toFixed(1)} CPU ms per 1,000 vectors (whole process; ` +
        `main thread ${sdk.mainMsPer1k.toFixed(1)}, other threads ${(sdk.cpuMsPer1k - sdk.mainMsPer1k).toFixed(1)}); ` +
        `embedpipe = ${(rate / sdk.rate).toFixed(2)}x it while embedding, ${(wallRate / sdk.wallRate).toFixed(2)}x spawn to exit, ` +
        `CPU ${(cpuMsPer1k / sdk.cpuMsPer1k).toFixed(2)}x`,
    );
    if (summary.status !== 'done' || summary.failures > 0 || summary.rejects > 0) {
      console.log(
        `  note: status ${summary.status}, ${summary.rejects} rejected, ${summary.failures} failed chunks, ${summary.retries} retries`,
      );
    }
  }
  if (pairs > 1) {
    const ratios = (f) => median(embedpipeRuns.map((run, i) => f(run) / f(sdkRuns[i])));
    console.log(
      `  median of ${pairs} pairs: embedpipe = ${ratios((r) => r.rate).toFixed(2)}x the SDK pool while embedding, ` +
        `${ratios((r) => r.wallRate).toFixed(2)}x spawn to exit, CPU ${ratios((r) => r.cpuMsPer1k).toFixed(2)}x ` +
        `(${median(embedpipeRuns.map((r) => r.cpuMsPer1k)).toFixed(1)} against ${median(sdkRuns.map((r) => r.cpuMsPer1k)).toFixed(1)} ms per 1,000 vectors; ` +
        `main threads ${median(embedpipeRuns.map((r) => r.mainMsPer1k)).toFixed(1)} against ${median(sdkRuns.map((r) => r.mainMsPer1k)).toFixed(1)})`,
    );
  }
  const bare = await bareClient(gateway.baseUrl, input);
  console.log(
    `  floor: bare fetch in the bench process (base64 not even decoded to numbers): ${bare.rate.toFixed(0)} vectors/s = ${pct(bare.rate)}, ` +
      `${bare.cpuMsPer1k.toFixed(1)} CPU ms per 1,000 vectors (sending only); embedpipe while embedding = ${(median(embedpipeRuns.map((r) => r.rate)) / bare.rate).toFixed(2)}x it`,
  );
} finally {
  await gateway.stop();
  await rm(dir, { recursive: true, force: true });
}

/** One `embedpipe run` of the corpus into a fresh folder: its rates, whole-process CPU and peak RSS. */
async function measureEmbedpipe(input, size) {
  runs += 1;
  const out = join(dir, `out-${runs}`);
  const started = performance.now();
  const { summary, cpuMs, mainThreadCpuMs, peakRss } = await runEmbedpipe(
    [
      '--input',
      input,
      '--model',
      model,
      '--out',
      out,
      '--concurrency',
      String(concurrency),
      '--max-inputs',
      String(inputs),
    ],
    { EMBEDPIPE_BASE_URL: gateway.baseUrl, EMBEDPIPE_API_KEY: API_KEY },
    // Sampled often: the CPU figure is the last sample before exit.
    { sampleMs: 50, prefix: pinned ? ['taskset', '-c', '0'] : [] },
  );
  const wallMs = performance.now() - started;
  await rm(out, { recursive: true, force: true });
  await rm(`${out}.versions`, { recursive: true, force: true });
  return {
    summary,
    cpuMs,
    wallMs,
    // Steady state: from the first request to the end (process start-up and the model lookup excluded).
    rate: summary.rows / (summary.embeddingMs / 1000),
    // The whole run: the child process from spawn to exit (start-up, model lookup, planning ahead of
    // the first request, the last part and the manifest included).
    wallRate: summary.rows / (wallMs / 1000),
    // Steadier than the share of the ceiling on a noisy machine: what each vector cost the client.
    cpuMsPer1k: (cpuMs / summary.rows) * 1000,
    mainMsPer1k: (mainThreadCpuMs / summary.rows) * 1000,
    mbPerS: size / 1e6 / (wallMs / 1000),
    peakMb: peakRss / 2 ** 20,
  };
}

/** The openai SDK pool (reference-client.mjs) in its own process, pinned like embedpipe. */
async function referenceClient(baseUrl, corpusPath) {
  const script = new URL('./reference-client.mjs', import.meta.url).pathname;
  const { stdout, cpuMs, mainThreadCpuMs, wallMs } = await runMeasured(
    [script, corpusPath, model, String(concurrency), String(inputs)],
    { EMBEDPIPE_BASE_URL: baseUrl, EMBEDPIPE_API_KEY: API_KEY },
    { prefix: pinned ? ['taskset', '-c', '0'] : [] },
  );
  const { vectors, sendingMs } = JSON.parse(stdout);
  return {
    rate: vectors / (sendingMs / 1000),
    wallRate: vectors / (wallMs / 1000),
    cpuMsPer1k: (cpuMs / vectors) * 1000,
    mainMsPer1k: (mainThreadCpuMs / vectors) * 1000,
  };
}

/** Vectors per second, and CPU per vector, of a plain p-limit pool sending the corpus's texts as they are. */
async function bareClient(baseUrl, corpusPath) {
  const texts = (await readFile(corpusPath, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line).text);
  const limit = pLimit(concurrency);
  const started = performance.now();
  const cpu = process.cpuUsage();
  const requests = [];
  for (let i = 0; i < texts.length; i += inputs) {
    const input = texts.slice(i, i + inputs);
    requests.push(
      limit(async () => {
        const response = await fetch(`${baseUrl}/embeddings`, {
          method: 'POST',
          headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model, input, encoding_format: 'base64' }),
        });
        const body = await response.json();
        if (!response.ok) throw new Error(`bare client: ${response.status} ${JSON.stringify(body)}`);
        for (const item of body.data) Buffer.from(item.embedding, 'base64');
        return body.data.length;
      }),
    );
  }
  const vectors = (await Promise.all(requests)).reduce((a, b) => a + b, 0);
  const { user, system } = process.cpuUsage(cpu);
  return {
    rate: vectors / ((performance.now() - started) / 1000),
    cpuMsPer1k: ((user + system) / 1000 / vectors) * 1000,
  };
}
