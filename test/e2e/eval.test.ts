/**
 * A model migration measured before the switch, as a new user would try it: a dataset embedded by
 * the emulator's weaker word-overlap model, then a migration to its better one under
 * `--switch-if` (switches), and back to the weaker one (built, held: exit 13, switched by hand).
 * `eval` compares versions on drawn or given queries, reproducibly from its seed, pays for the
 * queries once, and writes a report a browser opens.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { runCli } from '../helpers/cli.js';
import { seeded } from '../helpers/corpus.js';
import { tempFolder } from '../helpers/temp.js';

const root = await tempFolder('embedpipe-eval-');
const out = join(root, 'docs');
const corpus = join(root, 'docs.jsonl');
const WEAK = 'emu/bow-small';
const STRONG = 'emu/bow-large';

/** 400 documents of 40 words from a 600-word vocabulary: word overlap decides retrieval. */
beforeAll(async () => {
  const rand = seeded(5);
  const words = Array.from({ length: 600 }, (_, i) => `w${i.toString(36)}`);
  const lines = Array.from({ length: 400 }, (_, d) =>
    JSON.stringify({
      id: `doc-${d}`,
      text: Array.from({ length: 40 }, () => words[Math.floor(rand() * words.length)]).join(' '),
    }),
  );
  await writeFile(corpus, `${lines.join('\n')}\n`);
  const first = await run(WEAK);
  expect(first.code, first.stderr).toBe(0);
});

const run = (model: string, ...more: string[]) =>
  runCli(['run', '--emulator', '--input', corpus, '--model', model, '--out', out, '--json', ...more]);
const evalJson = async (...more: string[]) => {
  const result = await runCli(['eval', out, '--emulator', '--json', ...more]);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
};

describe('a migration measured before the switch', () => {
  it('switches to a better model when the rule holds, with a report', async () => {
    const result = await run(STRONG, '--switch-if', 'ndcg@10 >= current - 0.01');
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary.status).toBe('done');
    expect(summary.version).toMatchObject({ name: 'v000002', current: true, replaces: 'v000001' });
    expect(summary.switchIf).toMatchObject({ rule: 'ndcg@10 >= current - 0.01', holds: true });
    const html = await readFile(summary.switchIf.report, 'utf8');
    expect(html).toContain('<svg');
    expect(html).toContain('v000002');
  });

  it('holds a worse model back (exit 13): built and verified, switched only by hand', async () => {
    const result = await run(WEAK, '--switch-if', 'ndcg@10 >= current');
    expect(result.code, result.stderr).toBe(ExitCode.switchHeld);
    const summary = JSON.parse(result.stdout);
    expect(summary.status).toBe('held');
    expect(summary.version).toMatchObject({ name: 'v000003', current: false });
    expect(summary.switchIf.holds).toBe(false);
    expect(summary.switchIf.reason).toMatch(
      /ndcg@10 of v000003 \(emu\/bow-small\) is .* against .* for v000002/,
    );
    const verify = await runCli(['verify', out]);
    expect(verify.stdout + verify.stderr).toMatch(/keeps the dataset contract/);
    const listed = await runCli(['datasets', out, '--json']);
    const current = JSON.parse(listed.stdout).find((v: { state: string }) => v.state === 'current');
    expect(current.version).toBe('v000002');
    // Run again (a nightly job): the held version's vectors are reused, nothing is embedded again.
    const rerun = await run(WEAK, '--switch-if', 'ndcg@10 >= current');
    expect(rerun.code, rerun.stderr).toBe(ExitCode.switchHeld);
    const resummary = JSON.parse(rerun.stdout);
    expect(resummary.version.name).toBe('v000004');
    expect(resummary.batches).toMatchObject({ embedded: 0, resumed: resummary.batches.planned });
    expect(resummary.requests).toBe(0);
    const switched = await runCli(['datasets', out, '--switch', 'v000003']);
    expect(switched.code, switched.stderr).toBe(0);
    const back = await runCli(['datasets', out, '--switch', 'v000002']);
    expect(back.code, back.stderr).toBe(0);
  });

  it('eval: the better model scores higher and the paired interval says so, reproducibly, queries paid once', async () => {
    const first = await evalJson('--versions', 'v000001,v000002', '--seed', '7');
    expect(first.queries).toBe(200);
    expect(first.level).toBe('document');
    const [weak, strong] = first.versions;
    expect(weak.model).toBe(WEAK);
    expect(strong.model).toBe(STRONG);
    expect(strong.metrics.metrics['ndcg@10'].mean).toBeGreaterThan(weak.metrics.metrics['ndcg@10'].mean);
    const difference = first.comparisons[0].differences.mrr;
    expect(difference.mean).toBeGreaterThan(0);
    expect(difference.low).toBeGreaterThan(0);
    const again = await evalJson('--versions', 'v000001,v000002', '--seed', '7');
    expect(again.versions.map((v: { metrics: unknown }) => v.metrics)).toEqual(
      first.versions.map((v: { metrics: unknown }) => v.metrics),
    );
    expect(again.versions.map((v: { queries: { requests: number } }) => v.queries.requests)).toEqual([0, 0]);
    const other = await evalJson('--versions', 'v000001,v000002', '--seed', '8');
    expect(other.versions[0].metrics).not.toEqual(first.versions[0].metrics);
  });

  it('eval with a queries file: a query equal to a chunk ranks its document first', async () => {
    const lines = (await readFile(corpus, 'utf8')).trim().split('\n').slice(0, 20);
    const queries = join(root, 'queries.jsonl');
    await writeFile(
      queries,
      lines
        .map((line) => JSON.parse(line) as { id: string; text: string })
        .map((doc) => JSON.stringify({ query: doc.text, relevant: [doc.id] }))
        .join('\n'),
    );
    const result = await evalJson('--queries', queries, '--versions', 'v000002');
    expect(result.versions[0].metrics.metrics['recall@1'].mean).toBe(1);
  });

  it('measures smaller vectors beside each version: quality and bytes per vector', async () => {
    const result = await evalJson('--versions', 'v000002', '--variants', 'dims:128,int8,binary');
    const byName = Object.fromEntries(result.versions.map((v: { name: string }) => [v.name, v])) as Record<
      string,
      { bytesPerVector: number; dims: number; metrics: { metrics: Record<string, { mean: number }> } }
    >;
    expect(Object.keys(byName)).toEqual(['v000002', 'v000002 dims:128', 'v000002 int8', 'v000002 binary']);
    expect(byName['v000002']!.bytesPerVector).toBe(384 * 4);
    expect(byName['v000002 dims:128']!.dims).toBe(128);
    expect(byName['v000002 int8']!.bytesPerVector).toBe(388);
    expect(byName['v000002 binary']!.bytesPerVector).toBe(48);
    const ndcg = (name: string) => byName[name]!.metrics.metrics['ndcg@10']!.mean;
    expect(ndcg('v000002 int8')).toBeCloseTo(ndcg('v000002'), 2);
    expect(ndcg('v000002 binary')).toBeLessThan(ndcg('v000002'));
    expect(result.comparisons).toHaveLength(3);
  });

  it('refuses a bad rule, a bad queries line, an unknown version, each naming it', async () => {
    const rule = await run(STRONG, '--switch-if', 'precision@3 >= current');
    expect(rule.code).toBe(ExitCode.usage);
    expect(rule.stderr).toMatch(/--switch-if.*"precision@3" is not a metric/);
    const bad = join(root, 'bad.jsonl');
    await writeFile(bad, '{"query": "a b c", "relevant": ["doc-1"]}\n{"query": "", "relevant": ["doc-2"]}\n');
    const queries = await runCli(['eval', out, '--emulator', '--queries', bad]);
    expect(queries.code).toBe(ExitCode.usage);
    expect(queries.stderr).toMatch(/bad\.jsonl line 2: "query" must be a non-empty string/);
    const version = await runCli(['eval', out, '--emulator', '--versions', 'v000009']);
    expect(version.code).toBe(ExitCode.usage);
    expect(version.stderr).toMatch(/has no version v000009/);
  });
});
