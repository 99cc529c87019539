/**
 * `runPipeline` in-process against the emulator behind a proxy that can refuse chosen inputs with a
 * 400: a request refused whole is not committed, chunk failures are re-sent by a re-run (repair
 * batches) and make the run incomplete, another model's unfinished files are not deleted, and
 * temp files of killed runs are cleaned.
 */

import { mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunFlags, resolveRunSettings } from '../../src/config/settings.js';
import { EMULATOR_API_KEY, type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { UsageError } from '../../src/errors.js';
import { GatewayClient } from '../../src/gateway/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { RunStats } from '../../src/observability/stats.js';
import { type RunSummary, runPipeline } from '../../src/pipeline/run.js';
import { type RefusingProxy, startRefusingProxy } from '../helpers/refusing-proxy.js';

let emulator: RunningEmulator;
let proxy: RefusingProxy;
let proxyUrl: string;
let root: string;
let corpus: string;
/** Inputs containing one of these are refused with a 400 (a request holding any of them too). */
let refuse: string[] = [];
/** Every embeddings request's inputs, as the proxy saw them. */
let sent: string[][] = [];
/** Until when (ms since the epoch) the proxy refuses every request: a gateway refusing everything. */
let refuseAllUntil = 0;
/** A gateway's inputs-per-request limit, stated in its 400 when a request holds more. */
let inputLimit: number | undefined;
/** Requests the proxy refused. */
let refused = 0;

beforeAll(async () => {
  emulator = await startEmulator({ recordRequests: false });
  proxy = await startRefusingProxy(emulator.baseUrl, (input) => {
    sent.push(input);
    const answer =
      Date.now() < refuseAllUntil
        ? 'unsupported value for parameter: encoding_format'
        : inputLimit !== undefined && input.length > inputLimit
          ? `Too many inputs: ${input.length} > max_inputs_per_request ${inputLimit}`
          : input.some((t) => refuse.some((marker) => t.includes(marker)));
    if (answer !== false) refused += 1;
    return answer;
  });
  proxyUrl = proxy.baseUrl;
  root = await mkdtemp(join(tmpdir(), 'embedpipe-faults-'));
  corpus = join(root, 'corpus.jsonl');
  // Past the calibration window (256 documents), so probes never meet the refused inputs.
  const lines = Array.from({ length: 300 }, (_, i) => {
    let text = `document number ${i} about the weather in town ${i % 17}`;
    if (i === 280 || i === 281) text += ' ZZWHOLE';
    if (i === 283) text += ' ZZONE';
    return JSON.stringify({ id: `d${i}`, text });
  });
  await writeFile(corpus, `${lines.join('\n')}\n`);
});
afterAll(async () => {
  await proxy.close();
  await emulator.close();
  await rm(root, { recursive: true, force: true });
});

async function run(out: string, flags: RunFlags = {}): Promise<RunSummary> {
  const settings = resolveRunSettings(
    {
      input: corpus,
      model: 'emu/embed-small',
      out,
      baseUrl: proxyUrl,
      maxInputs: 2,
      commitInterval: 0,
      maxAttempts: 2,
      ...flags,
    },
    undefined,
    {},
  );
  const client = new GatewayClient({ baseUrl: proxyUrl, apiKey: EMULATOR_API_KEY });
  try {
    return await runPipeline(settings, { client, logger: silentLogger(), stats: new RunStats() });
  } finally {
    await client.close();
  }
}

describe('faults and re-runs', () => {
  it('re-sends a batch refused whole, and exactly the chunks that failed', async () => {
    const out = join(root, 'repair');
    refuse = ['ZZWHOLE', 'ZZONE'];
    sent = [];
    const first = await run(out);
    expect(first.status).toBe('incomplete');
    expect(first.batches.failed).toBe(1); // d280 + d281: every input refused the same way
    expect(first.failures).toBe(3); // those two, and d283 alone
    expect(first.rows).toBe(297);

    refuse = [];
    sent = [];
    const second = await run(out);
    expect(second.status).toBe('done');
    expect(second.failures).toBe(0);
    expect(second.rows).toBe(300);
    const texts = sent.flat();
    expect(texts.filter((t) => t.includes('ZZWHOLE'))).toHaveLength(2);
    expect(texts.filter((t) => t.includes('ZZONE'))).toHaveLength(1);
    // d282 shared d283's batch and was committed: not sent again.
    expect(texts.some((t) => t.startsWith('document number 282 '))).toBe(false);
    // Besides calibration probes (single inputs), only the refused batch and the failed chunk.
    expect(sent.filter((input) => input.length > 1)).toEqual([texts.filter((t) => t.includes('ZZWHOLE'))]);

    sent = [];
    const third = await run(out);
    expect(third).toMatchObject({ status: 'done', rows: 300, failures: 0 });
    // Nothing of the corpus again (calibration probes aside: single inputs).
    expect(sent.filter((input) => input.length > 1 || /ZZ/.test(input[0]!))).toEqual([]);
  });

  it('rides out a gateway refusing every request for a while: backs off, no request storm, nothing lost', async () => {
    const out = join(root, 'storm');
    sent = [];
    refused = 0;
    // The storm starts with the first batch (after the calibration probes) and lasts 2 s.
    const storm = run(out, { maxInputs: 8, maxAttempts: 8 });
    while (sent.length < 13) await new Promise((resolve) => setTimeout(resolve, 5));
    refuseAllUntil = Date.now() + 2_000;
    const summary = await storm;
    refuseAllUntil = 0;
    expect(summary).toMatchObject({ status: 'done', rows: 300, failures: 0 });
    expect(summary.batches.failed).toBe(0);
    // Halving every refused batch down to single inputs sent hundreds of requests in 2 s; backing
    // off (0.5 s, 1 s, 2 s) sends a few per batch in flight.
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThan(40);
  });

  it('learns a lower inputs-per-request limit from the first 400 that states it', async () => {
    const out = join(root, 'input-limit');
    sent = [];
    refused = 0;
    inputLimit = 8;
    try {
      const summary = await run(out, { maxInputs: 32, concurrency: 1 });
      expect(summary).toMatchObject({ status: 'done', rows: 300, failures: 0 });
      // One refused request teaches the limit; every later one keeps under it.
      expect(refused).toBe(1);
      expect(
        Math.max(...sent.slice(sent.findIndex((input) => input.length > 8) + 1).map((i) => i.length)),
      ).toBe(8);
      // The dataset's calibration keeps it: the next night (40 more documents) is never refused.
      expect(JSON.parse(await readFile(join(out, '_calibration.json'), 'utf8'))).toMatchObject({
        maxInputs: 8,
      });
      const more = join(root, 'input-limit-more.jsonl');
      const extra = Array.from({ length: 40 }, (_, i) =>
        JSON.stringify({ id: `n${i}`, text: `a new note ${i}` }),
      );
      await writeFile(more, `${(await readFile(corpus, 'utf8')).trimEnd()}\n${extra.join('\n')}\n`);
      sent = [];
      refused = 0;
      const next = await run(out, { maxInputs: 32, concurrency: 1, input: more });
      expect(next).toMatchObject({ status: 'done', rows: 340, failures: 0 });
      expect(refused).toBe(0);
      expect(Math.max(...sent.map((input) => input.length))).toBeLessThanOrEqual(8);
    } finally {
      inputLimit = undefined;
    }
  });

  it("refuses to delete another model's or plan's unfinished files unless --force", async () => {
    const out = join(root, 'leftovers');
    refuse = [];
    await run(out);
    // As if killed before the end: the version has no manifest, and the dataset no link to it.
    const version = join(`${out}.versions`, 'v000001');
    await rm(out);
    for (const name of await readdir(version))
      if (/manifest\.json$/.test(name)) await rm(join(version, name));
    const before = (await readdir(version)).filter((n) => n.endsWith('.parquet')).sort();
    expect(before.length).toBeGreaterThan(0);

    const other = run(out, { model: 'emu/embed-large' });
    await expect(other).rejects.toThrow(UsageError);
    await expect(run(out, { model: 'emu/embed-large' })).rejects.toThrow(/emu\/embed-small.*--force/s);
    await expect(run(out, { maxInputs: 3 })).rejects.toThrow(/other plan parameters.*--force/s);
    expect((await readdir(version)).filter((n) => n.endsWith('.parquet')).sort()).toEqual(before);

    const forced = await run(out, { maxInputs: 3, force: true });
    expect(forced.status).toBe('done');
    expect(forced.rows).toBe(300);
  });

  it('removes temp files of killed runs older than a minute, and only those', async () => {
    const out = join(root, 'temps');
    refuse = [];
    await run(out);
    // Temp files are left in the version a killed run was building: make the version unfinished.
    const version = join(`${out}.versions`, 'v000001');
    await rm(out);
    await rm(join(version, '_manifest.json'));
    const old = join(version, '.data-00009-abc.parquet.tmp-4242-1f');
    const fresh = join(version, '.data-00010-abc.parquet.tmp-4242-20');
    const other = join(version, '.notes.txt');
    for (const path of [old, fresh, other]) await writeFile(path, 'x');
    const longAgo = new Date(Date.now() - 3_600_000);
    await utimes(old, longAgo, longAgo);
    await utimes(other, longAgo, longAgo);
    await run(out);
    const names = await readdir(version);
    expect(names).not.toContain('.data-00009-abc.parquet.tmp-4242-1f');
    expect(names).toContain('.data-00010-abc.parquet.tmp-4242-20');
    expect(names).toContain('.notes.txt');
  });
});
