// The dataset contract's cost (the check before every switch, and `verify`), on a dataset of group
// files as a run writes them: default 1,000,000 rows of 384-dim vectors and ~600 characters of
// mixed-script text each, ~2 MB of vectors per file. Prints, per stage, wall time and rows/s:
//   hashes       the hash column alone of every file (what a nightly run's vector index read before)
//   keys         the ids, chunk indices and hashes of every file (what it reads now, and `verify`)
//   keys+texts   the same with every text hashed again (what the switch reads)
//   select       finalize's row selection against the plan
//   check        the contract against the plan, and the per-document digests written at the switch
//   recheck      the switch's last step: verify over the row keys already read (manifest, digests)
//   verify       `embedpipe verify` (fast) of the finished version, from the files
// and the switch's share of a run of the same rows at the throughput given by --rate (inputs/s:
// docs/benchmarks.md's measured `run` rate on this machine, default 9,000).
// Run after `npx tsc -p tsconfig.build.json`:  node bench/contract.bench.mjs [--rows N] [--dims D] [--rate R] [--json]
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { contentHash } from '../dist/content-hash.js';
import { readColumns } from '../dist/output/columns.js';
import {
  checkRows,
  DatasetRows,
  documentLines,
  ExpectedRows,
  rowsDigest,
  selectRows,
  VersionDigest,
} from '../dist/output/contract.js';
import { DatasetWriter } from '../dist/output/index.js';
import { writeManifest } from '../dist/output/manifest.js';
import { readRowKeys } from '../dist/output/row-keys.js';
import { verifyVersion } from '../dist/output/verify.js';
import { random, sentence } from './lib.mjs';

const MODEL = 'bench/model';
const RUN = { 'embedpipe.model': MODEL, 'embedpipe.plan': 'bench-plan', 'embedpipe.tool': 'bench' };
const SCRIPTS = [
  '数据在技术天气发展，系统了可以。',
  'مرحبا بالعالم ٣٤٥ API',
  'Ελληνικά και Русский',
  '👨‍👩‍👧 🇫🇷 ❤️',
  'e\u0301te\u0301 na\u0308ive',
];

function option(args, name, fallback) {
  const at = args.indexOf(name);
  return at >= 0 ? Number(args[at + 1]) : fallback;
}

async function writeDataset(dir, rows, dims, expected) {
  const writer = new DatasetWriter({ dir, format: 'parquet', metadata: RUN, dims });
  const rand = random(7);
  const perFile = Math.max(1, Math.floor((2 * 2 ** 20) / (dims * 4)));
  const files = [];
  for (let first = 0; first < rows; first += perFile) {
    const n = Math.min(perFile, rows - first);
    const chunks = [];
    const vectors = [];
    for (let i = 0; i < n; i++) {
      const row = first + i;
      let text = SCRIPTS[row % SCRIPTS.length];
      while (text.length < 600) text += ` ${sentence(rand)}`;
      const documentId = `doc-${Math.floor(row / 5)}`;
      const chunk = {
        documentId,
        index: row % 5,
        text,
        start: 0,
        end: text.length,
        bytes: text.length,
        tokens: 150,
        hash: contentHash(MODEL, text),
      };
      expected.add(documentId, chunk.index, chunk.hash);
      chunks.push(chunk);
      const v = new Float32Array(dims);
      for (let j = 0; j < dims; j++) v[j] = rand() - 0.5;
      vectors.push(v);
    }
    const batchId = `b${String(first).padStart(9, '0')}`;
    const batch = {
      batchId,
      model: MODEL,
      chunks,
      vectors,
      replanned: [],
      failures: [],
      usage: { promptTokens: 0, cost: 0, requests: 1, retries: 0 },
    };
    files.push((await writer.writeGroup([{ batchId, batch }])).file);
  }
  return files;
}

async function timed(fn) {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
}

export async function benchContract({ rows = 1_000_000, dims = 384, rate = 9000 } = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'embedpipe-contract-bench-'));
  try {
    const expected = new ExpectedRows();
    const write = await timed(() => writeDataset(dir, rows, dims, expected));
    const files = write.value;
    const scanAll = (options) => Promise.all(files.map((file) => readRowKeys(dir, file, 'parquet', options)));
    // Eight reads in flight, as finalize and verify read.
    const inFlight = async (options) => {
      const out = new Array(files.length);
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < files.length) {
            const k = next++;
            out[k] = await readRowKeys(dir, files[k], 'parquet', options);
          }
        }),
      );
      return out;
    };
    void scanAll;
    const hashesOnly = await timed(async () => {
      for (const file of files) await readColumns(join(dir, file), 'parquet', ['content_hash']);
    });
    const keys = await timed(() => inFlight({}));
    const texts = await timed(() => inFlight({ model: MODEL }));
    const select = await timed(() => selectRows(keys.value, expected, () => false));
    const unhashed = texts.value.reduce((n, scan) => n + scan.unhashed.length, 0);
    if (unhashed > 0) throw new Error(`${unhashed} rows whose text does not hash to their content_hash`);
    const check = await timed(() => {
      const datasetRows = new DatasetRows(keys.value);
      const violations = checkRows({ rows: datasetRows, dims, failed: new Map(), expected });
      const documentsText = documentLines(datasetRows.digests());
      return { violations, datasetRows, documentsText };
    });
    const { datasetRows, documentsText } = check.value;
    await writeFile(join(dir, '_documents.jsonl'), documentsText);
    await writeManifest(dir, {
      version: 2,
      tool: { name: 'embedpipe', version: 'bench' },
      createdAt: new Date().toISOString(),
      model: MODEL,
      dims,
      format: 'parquet',
      providers: [],
      input: { path: 'bench', kind: 'file', bytes: 0, files: 1, sha256: '0'.repeat(64) },
      gateway: { baseUrl: 'http://bench/v1', emulator: true },
      plan: {},
      counts: {
        documents: datasetRows.documents,
        chunks: rows,
        rows,
        rejects: 0,
        failures: 0,
        tokens: 0,
        costUsd: '0.0000000000',
        requests: 0,
        retries: 0,
      },
      contract: { documents: datasetRows.documents, documentsSha256: rowsDigest(documentsText) },
      files,
    });
    const fileRows = new Map(keys.value.map((scan) => [scan.file, scan.ids.length]));
    const counted = { fileRows, rows: datasetRows.rows, documents: datasetRows.documents };
    const recheck = await timed(() => verifyVersion({ dir, counted }));
    // The switch by digest: the plan's sum (the files' sums are added at their commit, in the run).
    const byDigest = await timed(() => {
      const plan = new VersionDigest();
      for (const [id, pairs] of expected.plannedDigests(new Map())) plan.addDocument(id, pairs);
      return plan;
    });
    const verify = await timed(() => verifyVersion({ dir }));
    const problems = [
      ...select.value.violations,
      ...check.value.violations,
      ...recheck.value.violations,
      ...verify.value.violations,
    ];
    if (problems.length > 0)
      throw new Error(`the benchmark's dataset breaks the contract: ${JSON.stringify(problems)}`);
    // The switch's own work: the selection, the check, and verify over the keys already read. A run
    // knows the keys of the files it wrote; a nightly run's vector index reads the keys of the files
    // carried over (before the contract it read their hash column alone: keys − hashes is new). Files
    // from elsewhere (a killed attempt's, distributed parts) are read with their texts hashed.
    const switchMs = select.ms + check.ms + recheck.ms;
    // A run whose files are all its own and digest to the plan: the plan's sum and the light verify.
    const digestSwitchMs = byDigest.ms + recheck.ms;
    const runMs = (rows / rate) * 1000;
    const stage = (name, { ms }) => ({
      stage: name,
      ms: Math.round(ms),
      rowsPerSecond: Math.round(rows / (ms / 1000)),
    });
    return {
      rows,
      dims,
      files: files.length,
      writeMs: Math.round(write.ms),
      stages: [
        stage('hashes', hashesOnly),
        stage('keys', keys),
        stage('keys+texts', texts),
        stage('select', select),
        stage('check', check),
        stage('recheck', recheck),
        stage('by digest', byDigest),
        stage('verify', verify),
      ],
      switchMs: Math.round(switchMs),
      digestSwitchMs: Math.round(digestSwitchMs),
      carriedReadMs: Math.round(keys.ms - hashesOnly.ms),
      runMsAtRate: Math.round(runMs),
      shareOfRun: Number((switchMs / runMs).toFixed(4)),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const result = await benchContract({
    rows: option(args, '--rows', 1_000_000),
    dims: option(args, '--dims', 384),
    rate: option(args, '--rate', 9000),
  });
  if (args.includes('--json')) console.log(JSON.stringify(result));
  else {
    console.log(
      `contract: ${result.rows} rows × ${result.dims} dims in ${result.files} files (written in ${result.writeMs} ms)`,
    );
    for (const s of result.stages)
      console.log(`  ${s.stage.padEnd(11)} ${String(s.ms).padStart(7)} ms  ${s.rowsPerSecond} rows/s`);
    console.log(
      `  a nightly run reads ${result.carriedReadMs} ms more to have the carried files' keys (keys − hashes)`,
    );
    console.log(
      `  the switch's checks: ${result.switchMs} ms = ${(result.shareOfRun * 100).toFixed(1)}% of a ${Math.round(result.runMsAtRate / 1000)} s run at ${Math.round(result.rows / (result.runMsAtRate / 1000))} inputs/s`,
    );
    console.log(`  by digest (every file the run's own): ${result.digestSwitchMs} ms`);
  }
}
