import { mkdtemp, readlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'vitest';
import { EMULATOR_API_KEY, startEmulator } from '../../src/emulator/index.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { startRedisServer } from '../helpers/redis-server.js';

it('debug race', { timeout: 300_000 }, async () => {
  const root = await mkdtemp(join(tmpdir(), 'dbg-'));
  const redis = await startRedisServer();
  const emulator = await startEmulator({ recordRequests: false });
  const env = { EMBEDPIPE_BASE_URL: emulator.baseUrl, EMBEDPIPE_API_KEY: EMULATOR_API_KEY };
  const w = spawnCli(['worker', '--redis', redis.url, '--concurrency', '2'], env);
  await new Promise((r) => setTimeout(r, 1500));
  let stuck = 0;
  for (let i = 0; i < 20; i++) {
    const input = join(root, `c${i}.jsonl`);
    await writeFile(input, `${JSON.stringify({ id: 'a', text: `hello ${i}` })}\n`);
    const out = join(root, `o${i}`);
    const e = await runCli(
      [
        'enqueue',
        '--input',
        input,
        '--model',
        'emu/embed-small',
        '--out',
        out,
        '--redis',
        redis.url,
        '--json',
      ],
      env,
    );
    if (e.code !== 0) console.log(e.stderr);
    let ok = false;
    for (let t = 0; t < 40 && !ok; t++) {
      ok = (await readlink(out).catch(() => '')) !== '';
      if (!ok) await new Promise((r) => setTimeout(r, 100));
    }
    if (!ok) {
      stuck++;
      const t0 = Date.now();
      while ((await readlink(out).catch(() => '')) === '' && Date.now() - t0 < 45_000)
        await new Promise((r) => setTimeout(r, 200));
      console.log('recovered after', Date.now() - t0, await readlink(out).catch(() => ''));
    }
    console.log(i, ok);
  }
  w.kill('SIGTERM');
  const r = await w.result;
  console.log(
    'stuck',
    stuck,
    r.stderr
      .split('\n')
      .filter((l) => !l.includes('"level":30'))
      .join('\n')
      .slice(0, 3000),
  );
  await redis.stop();
  await emulator.close();
});
