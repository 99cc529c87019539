/** The built CLI refusing what it used to accept silently: clear text keys, empty input, gzip read. */
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { runArgs, runCli } from '../helpers/cli.js';
import { tempFolder } from '../helpers/temp.js';

const root = await tempFolder('embedpipe-bad-input-');

describe('embedpipe run refuses', () => {
  it('plain HTTP to a remote host (exit 2), naming --allow-insecure-http', async () => {
    const input = join(root, 'a.jsonl');
    await writeFile(input, '{"id":"a","text":"alpha"}\n');
    const result = await runCli(
      runArgs(input, 'emu/embed-small', '--out', join(root, 'o1'), '--base-url', 'http://gateway.invalid/v1'),
      { EMBEDPIPE_API_KEY: 'secret-key' },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/clear text/);
    expect(result.stderr).toMatch(/--allow-insecure-http/);
    expect(result.stderr).not.toContain('secret-key');
  });

  it('an empty JSONL (exit 2, no manifest), and reads a gzip one named .jsonl', async () => {
    const empty = join(root, 'empty.jsonl');
    await writeFile(empty, '');
    const out = join(root, 'o2');
    const result = await runCli(runArgs(empty, 'emu/embed-small', '--out', out, '--emulator'));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no documents in the input/);
    const names = await readdir(out).catch(() => []);
    expect(names.filter((n) => n.includes('manifest') || n.endsWith('.parquet'))).toEqual([]);

    const packed = join(root, 'packed.jsonl');
    await writeFile(packed, gzipSync('{"id":"a","text":"alpha"}\n{"id":"b","text":"beta"}\n'));
    const ok = await runCli(
      runArgs(packed, 'emu/embed-small', '--out', join(root, 'o3'), '--emulator', '--json'),
    );
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ status: 'done', documents: 2, rows: 2 });
  });
});
