import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Reject } from '../../src/domain.js';
import { OutputError } from '../../src/errors.js';
import { FAILURES_FILE, JsonlFile, REJECTS_FILE, sideFile } from '../../src/output/jsonl.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'embedpipe-jsonl-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const rejects: Reject[] = [
  { file: 'corpus.csv', line: 3, id: 'a"b', reason: 'empty text' },
  { file: 'données/文件.jsonl', line: 10, reason: 'bad JSON:\n{"x":' },
  { file: 'x.csv', line: 11, id: '🙂', reason: 'line\u2028separator' },
];

describe('JsonlFile', () => {
  it('writes one JSON record per line on close and returns the count', async () => {
    const path = join(dir, '_rejects.jsonl');
    const file = new JsonlFile(path);
    for (const reject of rejects) file.add(reject);
    expect(await readdir(dir)).not.toContain('_rejects.jsonl'); // in place only on close
    expect(await file.close()).toBe(3);
    const lines = (await readFile(path, 'utf8')).split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((line) => JSON.parse(line))).toEqual(rejects);
    expect(await readdir(dir)).toEqual(['_rejects.jsonl']);
  });

  it('rewrites the whole file on a re-run, and removes it when there is nothing to report', async () => {
    const path = join(dir, '_failures.jsonl');
    await writeFile(path, '{"old":1}\n{"old":2}\n');
    const again = new JsonlFile(path);
    again.add({ batchId: 'b', message: 'new' });
    expect(await again.close()).toBe(1);
    expect(await readFile(path, 'utf8')).toBe('{"batchId":"b","message":"new"}\n');

    expect(await new JsonlFile(path).close()).toBe(0);
    expect(await readdir(dir)).not.toContain('_failures.jsonl');
    expect(await new JsonlFile(join(dir, 'never.jsonl')).close()).toBe(0);
    expect(await readdir(dir)).not.toContain('never.jsonl');
  });

  it('streams many records through a temp file that never matches the final name', async () => {
    const path = join(dir, 'many.jsonl');
    const file = new JsonlFile(path);
    for (let i = 0; i < 50_000; i++) file.add({ file: 'big.csv', line: i + 2, reason: 'empty text' });
    expect(await file.close()).toBe(50_000);
    const lines = (await readFile(path, 'utf8')).trimEnd().split('\n');
    expect(lines).toHaveLength(50_000);
    expect(JSON.parse(lines[49_999]!)).toEqual({ file: 'big.csv', line: 50_001, reason: 'empty text' });
    expect((await readdir(dir)).filter((name) => name.includes('many'))).toEqual(['many.jsonl']);
  });

  it('writes records of every size whole and in order, long ones past the lines gathered per write', async () => {
    const path = join(dir, 'sizes.jsonl');
    const file = new JsonlFile(path);
    const piece = 'é文🙂\u202e"\\\r\n';
    const records = [1, 70_000, 3, 65_530, 65_536, 200_000, 0, 12].map((n, i) => ({
      i,
      text: piece.repeat(Math.ceil(n / piece.length)).slice(0, n),
    }));
    for (const record of records) file.add(record);
    expect(await file.close()).toBe(records.length);
    const lines = (await readFile(path, 'utf8')).split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((line) => JSON.parse(line))).toEqual(records);
  });

  it('keeps a write failure for close, which names the file and leaves nothing behind', async () => {
    const gone = join(dir, 'gone');
    await mkdir(gone);
    const file = new JsonlFile(join(gone, '_rejects.jsonl'));
    await rm(gone, { recursive: true });
    // The folder is gone before the first write: add does not throw, close does.
    for (let i = 0; i < 5_000; i++) file.add({ file: 'big.csv', line: i + 2, reason: 'empty text' });
    await expect(file.close()).rejects.toThrow(/cannot write .*gone\/_rejects\.jsonl: .*ENOENT/);
    expect((await readdir(dir)).filter((name) => name.includes('gone'))).toEqual([]);
  });

  it('refuses records after close', async () => {
    const file = new JsonlFile(join(dir, 'closed.jsonl'));
    await file.close();
    expect(() => file.add({})).toThrow(OutputError);
    await expect(file.close()).rejects.toThrow(OutputError);
  });

  it('side files start with _ (readers skip them), and replace their names of the previous version', async () => {
    expect([REJECTS_FILE, FAILURES_FILE]).toEqual(['_rejects.jsonl', '_failures.jsonl']);
    const out = join(dir, 'legacy');
    await mkdir(out);
    await writeFile(join(out, 'rejects.jsonl'), '{"old":1}\n');
    await writeFile(join(out, 'failures.jsonl'), '{"old":2}\n');
    const rejectsFile = sideFile(out, REJECTS_FILE);
    rejectsFile.add(rejects[0]!);
    expect(await rejectsFile.close()).toBe(1);
    expect(await sideFile(out, FAILURES_FILE).close()).toBe(0);
    expect((await readdir(out)).sort()).toEqual(['_rejects.jsonl']);
  });
});
