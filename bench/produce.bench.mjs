// Planning's CPU, in process: corpus → chunks → batches → the plan's record, as `run` does it
// (planning/produce.ts), under a fixed calibration (weights an emulator run learned), nothing sent.
// Each round is a fresh child process, so V8's compilation of the planner is counted, as a run
// pays it; rounds differ by ±15% on this machine, so compare builds over alternating rounds.
//
//   npm run build && taskset -c 0 node bench/produce.bench.mjs [prose|multilingual] [rounds] [dist]
//
// `dist` (default ../dist) is the tsc output to measure: another build's, for an A/B.
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mb, writeJsonlCorpus } from './lib.mjs';
import { writeMultilingualCorpus } from './multilingual.mjs';

const CORPORA = {
  prose: {
    model: 'emu/embed-small',
    budgetTokens: 460,
    weights: [0.3579, 0, 0.4895, 0.0609, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 4, 4],
    write: (path) => writeJsonlCorpus(path, Infinity, 60, { maxDocuments: 51_200 }),
  },
  multilingual: {
    model: 'emu/embed-large',
    budgetTokens: 7372,
    weights: [
      0.2677, 0.6473, 0.9971, 0, 2, 2, 1.0637, 1.0666, 2, 1.0611, 1.0673, 1.0632, 3, 3, 1.0687, 1.0684,
    ],
    write: (path) => writeMultilingualCorpus(path, Infinity, { maxDocuments: 51_200 }),
  },
};

if (process.argv[2] === '--round') {
  const [, , , kind, input, dist, scratch] = process.argv;
  console.log(JSON.stringify(await round(CORPORA[kind], input, dist, scratch)));
} else {
  const kind = process.argv[2] ?? 'prose';
  const rounds = Number(process.argv[3] ?? 5);
  const dist = resolve(process.argv[4] ?? fileURLToPath(new URL('../dist', import.meta.url)));
  if (!CORPORA[kind]) throw new Error(`unknown corpus ${kind}; known: ${Object.keys(CORPORA).join(', ')}`);
  const dir = await mkdtemp(join(tmpdir(), 'embedpipe-produce-'));
  try {
    const input = join(dir, 'corpus.jsonl');
    const { documents, bytes } = await CORPORA[kind].write(input);
    const cpu = [];
    for (let i = 0; i < rounds; i++) {
      const child = spawnSync(
        process.execPath,
        [fileURLToPath(import.meta.url), '--round', kind, input, dist, dir],
        { encoding: 'utf8' },
      );
      if (child.status !== 0) throw new Error(`round ${i + 1} failed: ${child.stderr}`);
      const result = JSON.parse(child.stdout);
      cpu.push(result.cpuMs);
      console.log(
        `produce (${kind}): ${documents} documents (${mb(bytes)} MB) → ${result.chunks} chunks in ${result.batches} batches: ` +
          `${result.cpuMs.toFixed(0)} CPU ms (${((result.cpuMs * 1000) / documents).toFixed(1)} µs a document)`,
      );
    }
    const sorted = [...cpu].sort((a, b) => a - b);
    console.log(
      `produce (${kind}): median ${sorted[Math.floor(sorted.length / 2)].toFixed(0)} CPU ms of ${rounds} rounds`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** One round in this process: the CPU of planning `input` (settings resolved as a run resolves them). */
async function round(corpus, input, dist, scratch) {
  const load = (module) => import(join(dist, module));
  const { resolveRunSettings } = await load('config/settings.js');
  const { readEnvironment } = await load('config/env.js');
  const { makePlan } = await load('planning/plan.js');
  const { produce } = await load('planning/produce.js');
  const { RunSizing } = await load('chunking/run-sizing.js');
  const { RunStats } = await load('observability/stats.js');
  const { PlannedChunks } = await load('output/planned-chunks.js');
  const env = readEnvironment({ EMBEDPIPE_BASE_URL: 'http://127.0.0.1:9/v1', EMBEDPIPE_API_KEY: 'unused' });
  const flags = { input, model: corpus.model, out: join(scratch, 'out'), maxInputs: 128, concurrency: 8 };
  const settings = resolveRunSettings(flags, undefined, env);
  const model = { id: corpus.model, contextLength: 8192, inputModalities: ['text'] };
  const plan = { ...makePlan(settings, model), budgetTokens: corpus.budgetTokens };
  const { model: id, budgetTokens, weights } = corpus;
  const state = {
    version: 2,
    model: id,
    budgetTokens,
    epochs: [{ fromDocument: 0, weights, budgetTokens, reason: 'probes' }],
  };
  const sizing = RunSizing.restore({ model: id, budgetTokens, overlapTokens: settings.overlap }, state);
  const stats = new RunStats();
  const expected = new PlannedChunks(scratch);
  const started = process.cpuUsage();
  let batches = 0;
  let chunks = 0;
  const planning = { settings, plan, sizing, stats, committed: new Map(), onReject: () => {} };
  for await (const batch of produce(planning, expected)) {
    batches += 1;
    chunks += batch.chunks.length;
    sizing.release(batch.chunks);
  }
  const used = process.cpuUsage(started);
  expected.close();
  return { batches, chunks, cpuMs: (used.user + used.system) / 1000 };
}
