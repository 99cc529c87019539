/**
 * A text folder holding a file nobody can read: the corpus reader rejects it, and the manifest's
 * input digest leaves it out instead of failing the run (every re-run failed the same way, exit 7).
 *
 * `chmod 000` does not stop root (CI may run as root): there, the unreadable file is a symlink to
 * /proc/self/mem, a regular file whose read fails (EIO) for every user; a chmod 000 folder is listed by
 * a child process run as nobody (setpriv). Without either, the test skips.
 */
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { IdRegistry } from '../../src/corpus/ids.js';
import { readTextFolder } from '../../src/corpus/text-folder.js';
import type { CorpusEntry } from '../../src/domain.js';
import { isTextFileName } from '../../src/files/file-kinds.js';
import { SYNC_READ_BYTES } from '../../src/files/sync-read.js';
import type { RecordTotals } from '../../src/observability/ledger.js';
import { digestInput } from '../../src/output/input-digest.js';
import { readManifest, writeManifest } from '../../src/output/manifest.js';
import { manifestOf } from '../../src/output/manifest-of.js';
import { skipOutsideCi } from '../helpers/skip.js';
import { tempFolder } from '../helpers/temp.js';

const execFileAsync = promisify(execFile);
const root = await tempFolder('embedpipe-digest-');
const sha = (text: string) => createHash('sha256').update(text).digest('hex');

/** Folders and files made unreadable here, given their permissions back so the temp folder can go. */
const locked: string[] = [];
afterAll(async () => {
  for (const path of locked) await chmod(path, 0o755).catch(() => {});
});

/** Makes `path` a .txt file nobody can read; false when this machine cannot make one. */
async function unreadableFile(path: string): Promise<boolean> {
  await writeFile(path, 'secret\n');
  await chmod(path, 0o000);
  locked.push(path);
  if (!(await canRead(path))) return true;
  // Root reads a chmod 000 file; /proc/self/mem is a regular file whose read fails for root too.
  await rm(path);
  const linked = await symlink('/proc/self/mem', path).then(
    () => true,
    () => false,
  );
  return linked && !(await canRead(path));
}

/**
 * digestInput of `dir` in a child process run as nobody (setpriv), from the built modules; undefined
 * where setpriv is missing. Root's temp folder is opened to others so that nobody reaches `dir`.
 */
async function digestAsNobody(dir: string): Promise<{ files: number; sha256: string } | undefined> {
  if (spawnSync('setpriv', ['--version']).status !== 0) return undefined;
  await chmod(root, 0o755);
  const dist = (module: string) => JSON.stringify(new URL(`../../dist/${module}.js`, import.meta.url).href);
  const script = `
    const { digestInput } = await import(${dist('output/input-digest')});
    const { isTextFileName } = await import(${dist('files/file-kinds')});
    process.stdout.write(JSON.stringify(await digestInput(${JSON.stringify(dir)}, { include: isTextFileName })));`;
  const { stdout } = await execFileAsync('setpriv', [
    '--reuid=65534',
    '--regid=65534',
    '--clear-groups',
    process.execPath,
    '--input-type=module',
    '-e',
    script,
  ]);
  return JSON.parse(stdout);
}

function canRead(path: string): Promise<boolean> {
  return readFile(path).then(
    () => true,
    () => false,
  );
}

/** A folder with a.txt, b.txt and locked.txt (unreadable), or undefined when that cannot be made. */
async function folderWithUnreadableFile(name: string): Promise<string | undefined> {
  const dir = join(root, name);
  await mkdir(dir);
  await writeFile(join(dir, 'a.txt'), 'alpha\n');
  await writeFile(join(dir, 'b.txt'), 'beta\n');
  return (await unreadableFile(join(dir, 'locked.txt'))) ? dir : undefined;
}

describe('the input digest of a text folder with an unreadable file', () => {
  it('leaves the file out: the digest is that of the readable files, stable, and follows their changes', async (context) => {
    const dir = await folderWithUnreadableFile('docs');
    if (!dir) return skipOutsideCi(context, 'cannot make an unreadable file on this machine');

    const digest = await digestInput(dir, { include: isTextFileName });
    expect(digest).toEqual({
      path: dir,
      kind: 'folder',
      bytes: 'alpha\n'.length + 'beta\n'.length,
      files: 2,
      sha256: sha(`${sha('alpha\n')}  a.txt\n${sha('beta\n')}  b.txt\n`),
    });
    // The same folder, the same digest: a re-run's manifest says the input did not change.
    expect(await digestInput(dir, { include: isTextFileName })).toEqual(digest);

    await writeFile(join(dir, 'a.txt'), 'alpha, edited\n');
    const edited = await digestInput(dir, { include: isTextFileName });
    expect(edited.sha256).not.toBe(digest.sha256);
    expect(edited.files).toBe(2);
  });

  it('is what the corpus reader read: it rejects the same file and reads the others', async (context) => {
    const dir = await folderWithUnreadableFile('corpus');
    if (!dir) return skipOutsideCi(context, 'cannot make an unreadable file on this machine');
    const entries: CorpusEntry[] = [];
    for await (const entry of readTextFolder({
      path: dir,
      file: dir,
      ids: new IdRegistry(),
      onBytes: () => {},
      maxFileBytes: 1024,
      followSymlinks: true, // the root fallback is a symlink out of the folder
    })) {
      entries.push(entry);
    }
    expect(entries.map((e) => (e.kind === 'reject' ? `reject ${e.reject.reason}` : e.kind))).toEqual([
      'document',
      'document',
      expect.stringMatching(/^reject unreadable file \(E[A-Z]+\)$/),
    ]);
    expect((await digestInput(dir, { include: isTextFileName })).files).toBe(2);
  });

  it("no longer fails the version's manifest: it is written, and lists the readable files", async (context) => {
    const dir = await folderWithUnreadableFile('manifest');
    if (!dir) return skipOutsideCi(context, 'cannot make an unreadable file on this machine');
    const tally: RecordTotals = {
      batches: 1,
      rows: 2,
      dims: 8,
      promptTokens: 4,
      cost: 0,
      requests: 1,
      retries: 0,
      sent: 0,
      reused: 0,
      deduplicated: 0,
      providers: new Set(['emu']),
      failures: [],
    };
    const manifest = await manifestOf(
      {
        model: 'emu/embed-small',
        dims: 8,
        format: 'parquet',
        input: dir,
        gateway: { baseUrl: 'http://127.0.0.1:1/v1', emulator: true },
        plan: {},
        counts: { documents: 2, rejects: 1, failures: 0 },
        tally,
      },
      {
        files: ['part-1.parquet'],
        rows: 2,
        dataset: { version: 'v000001', chunks: { sent: 2, reused: 0, deduplicated: 0 } },
      },
    );
    const out = join(root, 'manifest-out');
    await writeManifest(out, manifest);
    const written = await readManifest(out);
    expect(written?.version === 2 && written.input).toMatchObject({ kind: 'folder', files: 2 });
  });

  it('leaves out a subfolder it cannot list, as the corpus reader rejects it', async (context) => {
    const dir = join(root, 'nested');
    await mkdir(join(dir, 'closed'), { recursive: true });
    await writeFile(join(dir, 'a.txt'), 'alpha\n');
    await writeFile(join(dir, 'closed', 'c.txt'), 'gamma\n');
    const open = await digestInput(dir, { include: isTextFileName });
    await chmod(join(dir, 'closed'), 0o000);
    locked.push(join(dir, 'closed'));
    const listable = await readdir(join(dir, 'closed')).then(
      () => true,
      () => false,
    );
    // Root lists a chmod 000 folder: there the digest is taken by a child process run as nobody.
    const closed = listable ? await digestAsNobody(dir) : await digestInput(dir, { include: isTextFileName });
    if (closed === undefined)
      return skipOutsideCi(context, 'root lists a chmod 000 folder, and setpriv is missing');
    expect(closed).toMatchObject({ files: 1, sha256: sha(`${sha('alpha\n')}  a.txt\n`) });
    expect(closed.sha256).not.toBe(open.sha256);
  });
});

describe('the input digest of a folder', () => {
  it('hashes small files whole and large ones streamed, to the same sha256sum-style listing', async () => {
    const dir = join(root, 'sizes');
    await mkdir(join(dir, 'sub'), { recursive: true });
    const large = `${'line of a large file, 😀\n'.repeat(Math.ceil(SYNC_READ_BYTES / 20))}`;
    await writeFile(join(dir, 'large.txt'), large);
    await writeFile(join(dir, 'sub', 'small.md'), 'small\r\n');
    await writeFile(join(dir, 'empty.txt'), '');
    // Sorted as UTF-8 bytes: U+E000 before U+1F600 (UTF-16 code units would put the emoji first).
    await writeFile(join(dir, '\u{1F600}.txt'), 'emoji');
    await writeFile(join(dir, '\uE000.txt'), 'private use');
    expect(Buffer.byteLength(large)).toBeGreaterThan(SYNC_READ_BYTES);
    const listing = [
      `${sha('')}  empty.txt`,
      `${sha(large)}  large.txt`,
      `${sha('small\r\n')}  sub/small.md`,
      `${sha('private use')}  \uE000.txt`,
      `${sha('emoji')}  \u{1F600}.txt`,
    ];
    expect(await digestInput(dir, { include: isTextFileName })).toEqual({
      path: dir,
      kind: 'folder',
      bytes: Buffer.byteLength(large) + 'small\r\n'.length + 'emoji'.length + 'private use'.length,
      files: 5,
      sha256: sha(`${listing.join('\n')}\n`),
    });
  });
});

describe('the input digest of a file the run read to its end', () => {
  const tally: RecordTotals = {
    batches: 1,
    rows: 1,
    dims: 8,
    promptTokens: 2,
    cost: 0,
    requests: 1,
    retries: 0,
    sent: 1,
    reused: 0,
    deduplicated: 0,
    providers: new Set(['emu']),
    failures: [],
  };
  const facts = (input: string, inputRead?: { sha256: string; bytes: number }) => ({
    model: 'emu/embed-small',
    dims: 8,
    format: 'parquet' as const,
    input,
    ...(inputRead ? { inputRead } : {}),
    gateway: { baseUrl: 'http://127.0.0.1:1/v1', emulator: true },
    plan: {},
    counts: { documents: 1, rejects: 0, failures: 0 },
    tally,
  });
  const done = {
    files: ['part-1.parquet'],
    rows: 1,
    dataset: { version: 'v000001', chunks: { sent: 1, reused: 0, deduplicated: 0 } },
  };

  it('is recorded as read, without reading the file again; without it the file is hashed at the switch', async () => {
    const gone = join(root, 'read-then-removed.jsonl');
    const read = { sha256: sha('{"id":"1","text":"t"}\n'), bytes: 22 };
    expect((await manifestOf(facts(gone, read), done)).input).toEqual({
      path: gone,
      kind: 'file',
      bytes: 22,
      files: 1,
      sha256: read.sha256,
    });
    await expect(manifestOf(facts(gone), done)).rejects.toThrow(/cannot read .*read-then-removed\.jsonl/);
    const here = join(root, 'read-here.jsonl');
    await writeFile(here, '{"id":"1","text":"t"}\n');
    expect((await manifestOf(facts(here), done)).input).toEqual({
      path: here,
      kind: 'file',
      bytes: 22,
      files: 1,
      sha256: read.sha256,
    });
  });
});
