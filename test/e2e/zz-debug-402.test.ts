import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'vitest';
import { startEmulator } from '../../src/emulator/index.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { writeHardCsv } from '../helpers/corpus.js';
import { startRedisServer } from '../helpers/redis-server.js';

it('debug 402', { timeout: 120_000 }, async () => {
  const root = await mkdtemp(join(tmpdir(), 'dbg-'));
  const corpusPath = join(root, 'c.csv');
  await writeHardCsv(corpusPath, 40, 5);
  const redis = await startRedisServer();
  const key = 'credit-limited-key-0001';
  const emulator = await startEmulator({ keys: [{ key, credits: 100 }] });
  const env = { EMBEDPIPE_BASE_URL: emulator.baseUrl, EMBEDPIPE_API_KEY: key };
  const flags = (out: string) => [
    '--input',
    corpusPath,
    '--model',
    'emu/embed-small',
    '--out',
    out,
    '--max-inputs',
    '4',
  ];
  const dry = await runCli(['run', ...flags(join(root, 'dry')), '--dry-run', '--json'], env);
  const cost = JSON.parse(dry.stdout).cost;
  console.log('cost', cost);
  emulator.reset({ keys: [{ key, credits: cost * 0.4 }] });
  const e = await runCli(['enqueue', ...flags(join(root, 'out')), '--redis', redis.url, '--json'], env);
  console.log(e.code, e.stdout, e.stderr.slice(-2000));
  const runId = JSON.parse(e.stdout).runId;
  const w = spawnCli(['worker', '--redis', redis.url, '--concurrency', '2'], env);
  for (let i = 0; i < 10; i++) {
    await new Promise((r) => setTimeout(r, 2000));
    const s = await runCli(['status', runId, '--redis', redis.url, '--json'], env);
    console.log(s.stdout, emulator.stats.byStatus, emulator.stats.spend);
  }
  w.kill('SIGTERM');
  const r = await w.result;
  console.log(r.code, r.stderr.slice(-6000));
  await redis.stop();
  await emulator.close();
});
