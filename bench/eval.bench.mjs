// `embedpipe eval`: 1,000 known-item queries over ROWS chunks x 384 dims (emu/bow-large, one chunk
// per document, words from a 5,000-word vocabulary), exact search. Reports the wall time of eval, its
// CPU time, and that of a second eval whose queries are all cached (search and statistics alone).
// Usage: npm run build && node bench/eval.bench.mjs [ROWS=200000] [QUERIES=1000]
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, random } from './lib.mjs';

const ROWS = Number(process.argv[2] ?? 200_000);
const QUERIES = Number(process.argv[3] ?? 1_000);
const root = await mkdtemp(join(tmpdir(), 'embedpipe-eval-bench-'));
const out = join(root, 'docs');
const corpus = join(root, 'docs.jsonl');

function cli(args) {
  const started = process.hrtime.bigint();
  // BENCH_NODE_ARGS: node flags for the CLI, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
  const node = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const run = spawnSync('/usr/bin/time', ['-f', '%U %S', process.execPath, ...node, CLI, ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (run.status !== 0)
    throw new Error(`embedpipe ${args.join(' ')}: exit ${run.status}\n${run.stderr.slice(-2000)}`);
  const [user, system] = run.stderr.trim().split('\n').at(-1).split(' ').map(Number);
  return { seconds, cpu: user + system, stdout: run.stdout };
}

try {
  const rand = random(11);
  const words = Array.from({ length: 5_000 }, (_, i) => `w${i.toString(36)}`);
  const lines = [];
  for (let i = 0; i < ROWS; i++) {
    const text = Array.from({ length: 24 }, () => words[Math.floor(rand() * words.length)]).join(' ');
    lines.push(JSON.stringify({ id: `d${i}`, text }));
  }
  await writeFile(corpus, `${lines.join('\n')}\n`);
  const run = cli([
    'run',
    '--emulator',
    '--input',
    corpus,
    '--model',
    'emu/bow-large',
    '--out',
    out,
    '--json',
  ]);
  console.log(`embedded ${ROWS} chunks in ${run.seconds.toFixed(1)} s`);
  const first = cli(['eval', out, '--emulator', '--sample', String(QUERIES), '--json']);
  const evaluation = JSON.parse(first.stdout);
  const again = cli(['eval', out, '--emulator', '--sample', String(QUERIES), '--json']);
  const metrics = evaluation.versions[0].metrics.metrics;
  console.log(
    `eval, ${QUERIES} queries over ${ROWS} x 384: ${first.seconds.toFixed(1)} s wall, ${first.cpu.toFixed(1)} s CPU ` +
      `(queries embedded: ${evaluation.versions[0].queries.requests} requests); again with every query cached: ` +
      `${again.seconds.toFixed(1)} s wall, ${again.cpu.toFixed(1)} s CPU; ` +
      `recall@1 ${metrics['recall@1'].mean.toFixed(3)}, nDCG@10 ${metrics['ndcg@10'].mean.toFixed(3)}`,
  );
} finally {
  await rm(root, { recursive: true, force: true });
}
