// Two builds of embedpipe compared on CPU per 1,000 inputs, both runs of a pair at the same time on
// one core (the emulator on the other), so both meet the same phase of the host. Run one after the
// other, pairs on this VM drifted by up to 30% between neighbours and hid 2% changes; side by side,
// one build against itself gave 0.982–1.034 a pair, mean 1.008 over five (docs/benchmarks.md, "a
// nineteenth session"): trust a mean of six or more pairs to about 1%.
// `node bench/paired-builds.mjs prose|multilingual PAIRS OLD_CLI NEW_CLI`, each CLI a built
// dist/bundle/main.js (e.g. of a `git worktree` of the older commit). Not part of `npm run bench`:
// a tool for deciding whether a change pays.
import { spawn } from 'node:child_process';
import { readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { corpusOf } from './corpora.mjs';
import { API_KEY, startGateway } from './lib.mjs';

const [kind = 'prose', pairsArg = '6', oldCli, newCli] = process.argv.slice(2);
if (!oldCli || !newCli)
  throw new Error('usage: node bench/paired-builds.mjs prose|multilingual PAIRS OLD_CLI NEW_CLI');
const corpus = corpusOf(kind);
const input = join(tmpdir(), `embedpipe-paired-${kind}.jsonl`);
await stat(input).catch(() => corpus.write(input, 51_200));

const gateway = await startGateway(['--latency', '50'], ['taskset', '-c', '1']);

/** One run on core 0: CPU ms per 1,000 rows from /usr/bin/time (user + system, every thread). */
async function measure(label, cli) {
  const out = join(tmpdir(), `embedpipe-paired-out-${label}`);
  await rm(out, { recursive: true, force: true });
  await rm(`${out}.versions`, { recursive: true, force: true });
  const timeFile = join(tmpdir(), `embedpipe-paired-time-${label}`);
  const args = [
    'run',
    '--input',
    input,
    '--model',
    corpus.model,
    '--out',
    out,
    '--concurrency',
    '8',
    '--max-inputs',
    '128',
    '--json',
  ];
  const child = spawn(
    '/usr/bin/time',
    ['-f', '%e %U %S', '-o', timeFile, 'taskset', '-c', '0', process.execPath, cli, ...args],
    {
      env: { PATH: process.env.PATH, EMBEDPIPE_BASE_URL: gateway.baseUrl, EMBEDPIPE_API_KEY: API_KEY },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`${cli} exited ${code}: ${stderr.slice(-1000)}`);
  const [wall, user, system] = (await readFile(timeFile, 'utf8')).trim().split(/\s+/).map(Number);
  const { rows } = JSON.parse(stdout);
  return { cpu: ((user + system) * 1000) / (rows / 1000), system: (system * 1000) / (rows / 1000), wall };
}

const ratios = [];
try {
  for (let pair = 1; pair <= Number(pairsArg); pair++) {
    const [before, after] = await Promise.all([measure('old', oldCli), measure('new', newCli)]);
    ratios.push(after.cpu / before.cpu);
    console.log(
      `pair ${pair}: old ${before.cpu.toFixed(1)}, new ${after.cpu.toFixed(1)} CPU ms per 1,000 (system ${before.system.toFixed(1)} / ${after.system.toFixed(1)}; ` +
        `wall ${before.wall} / ${after.wall} s): new/old ${ratios.at(-1).toFixed(3)}`,
    );
  }
  const sorted = [...ratios].sort((a, b) => a - b);
  const mean = ratios.reduce((a, b) => a + b, 0) / ratios.length;
  console.log(
    `${kind}: new/old CPU per 1,000 over ${ratios.length} pairs: median ${sorted[Math.floor(sorted.length / 2)].toFixed(3)}, ` +
      `mean ${mean.toFixed(3)}, range ${sorted[0].toFixed(3)}–${sorted.at(-1).toFixed(3)}`,
  );
} finally {
  await gateway.stop();
}
