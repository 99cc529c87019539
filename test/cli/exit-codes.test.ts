/**
 * Exit codes and messages a new user meets first, through the built CLI: a gateway that cannot be
 * reached (6), a base URL without /v1 (2), a missing key (3), an --out that cannot be a folder (7),
 * an input whose every row is rejected (2), a job file with several problems (2, every one listed),
 * and a dry run on a finished output (says a re-run sends nothing).
 */
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EMULATOR_API_KEY,
  EMULATOR_MANAGEMENT_KEY,
  type RunningEmulator,
  startEmulator,
} from '../../src/emulator/index.js';
import { ExitCode } from '../../src/errors.js';
import { REJECTS_FILE } from '../../src/output/index.js';
import { runArgs, runCli } from '../helpers/cli.js';
import { tempFolder } from '../helpers/temp.js';

let emulator: RunningEmulator;
const dir = await tempFolder('embedpipe-exit-');
/** A local port nothing listens on: connecting is refused at once. */
let closedUrl: string;

beforeAll(async () => {
  emulator = await startEmulator({ recordRequests: false });
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  closedUrl = `http://127.0.0.1:${port}/v1`;
});
afterAll(async () => {
  await emulator.close();
});

const oneLine = (stderr: string): string => {
  const lines = stderr
    .trim()
    .split('\n')
    .filter((line) => !line.startsWith('{')); // pino JSON logs of `run`
  expect(lines, stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^embedpipe: /);
  expect(stderr).not.toMatch(/internal error|\n\s+at /);
  return lines[0]!;
};

/** `run` of `input` with emu/embed-small, then `more`. */
const runSmall = (input: string, ...more: string[]) => runArgs(input, 'emu/embed-small', ...more);
/** Runs `run` of `input` with emu/embed-small against the built-in emulator, then `more`. */
const runEmulated = (input: string, ...more: string[]) => runCli(runSmall(input, '--emulator', ...more));

async function csv(name: string, body: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, body);
  return path;
}

describe('gateway unreachable', () => {
  it('exits 6 naming the base URL and what to check, for every command', async () => {
    const env = {
      EMBEDPIPE_BASE_URL: closedUrl,
      EMBEDPIPE_API_KEY: EMULATOR_API_KEY,
      EMBEDPIPE_MANAGEMENT_KEY: EMULATOR_MANAGEMENT_KEY,
    };
    const input = await csv('unreachable.csv', 'id,text\n1,hello\n');
    const audio = await csv('a.wav', 'RIFF');
    for (const args of [
      ['models'],
      ['embed', 'x', '--model', 'emu/embed-small'],
      ['members'],
      ['transcribe', audio, '--model', 'emu/whisper-tiny'],
      runSmall(input, '--out', join(dir, 'never')),
    ]) {
      const r = await runCli(args, env);
      const line = oneLine(r.stderr);
      expect(r.code, `${args[0]}: ${line}`).toBe(ExitCode.unreachable);
      expect(line).toContain(`gateway unreachable at ${closedUrl}`);
      expect(line).toMatch(/ECONNREFUSED/);
      expect(line).toMatch(/is the gateway running.*EMBEDPIPE_BASE_URL.*proxy/);
      expect(line).toMatch(/after 3 attempts/);
    }
  });

  it('exits 6 on a DNS failure', async () => {
    const r = await runCli(['models'], {
      EMBEDPIPE_BASE_URL: 'https://no-such-gateway.invalid/v1',
      EMBEDPIPE_API_KEY: EMULATOR_API_KEY,
    });
    expect(r.code, r.stderr).toBe(ExitCode.unreachable);
    expect(oneLine(r.stderr)).toMatch(
      /gateway unreachable at https:\/\/no-such-gateway\.invalid\/v1.*(ENOTFOUND|EAI_AGAIN)/,
    );
  });
});

describe('base URL without its version segment', () => {
  it('says the URL must end in /v1 and names the URL used (models and run)', async () => {
    const bare = emulator.baseUrl.replace(/\/v1$/, '');
    const env = { EMBEDPIPE_BASE_URL: bare, EMBEDPIPE_API_KEY: EMULATOR_API_KEY };
    const input = await csv('nov1.csv', 'id,text\n1,hello\n');
    for (const args of [['models'], runSmall(input, '--out', join(dir, 'nov1'))]) {
      const r = await runCli(args, env);
      const line = oneLine(r.stderr);
      expect(r.code, line).toBe(ExitCode.usage);
      expect(line).toContain(bare);
      expect(line).toMatch(/must end in the API version segment/);
      expect(line).toContain(`did you mean ${bare}/v1?`);
    }
  });
});

describe('missing key', () => {
  it('is an authentication problem (exit 3) naming the variable to set', async () => {
    const input = await csv('nokey.csv', 'id,text\n1,hello\n');
    const cases: Array<[string[], RegExp]> = [
      [runSmall(input), /EMBEDPIPE_API_KEY is not set.*--emulator/],
      [['models'], /EMBEDPIPE_API_KEY is not set/],
      [['embed', 'x', '--model', 'emu/embed-small'], /EMBEDPIPE_API_KEY is not set/],
      [['members'], /EMBEDPIPE_MANAGEMENT_KEY is not set/],
    ];
    for (const [args, pattern] of cases) {
      const r = await runCli(args, { EMBEDPIPE_BASE_URL: emulator.baseUrl });
      const line = oneLine(r.stderr);
      expect(r.code, line).toBe(ExitCode.authentication);
      expect(line).toMatch(pattern);
    }
  });
});

describe('--out that cannot be a folder', () => {
  it('exits 7 with one line naming the path, never an internal error', async () => {
    const input = await csv('out.csv', 'id,text\n1,hello\n');
    const file = await csv('not-a-folder', 'x');
    for (const [out, why] of [
      [file, /exists and is not a folder \(EEXIST\)/],
      [join(file, 'sub'), /a part of the path is a file, not a folder \(ENOTDIR\)/],
    ] as const) {
      const r = await runEmulated(input, '--out', out);
      const line = oneLine(r.stderr);
      expect(r.code, line).toBe(ExitCode.output);
      expect(line).toContain(`cannot use ${out} as the output folder`);
      expect(line).toMatch(why);
    }
  });
});

describe('an input whose every row is rejected', () => {
  it('exits 2 pointing at the rejects file, in a run and in a dry run', async () => {
    // Rows with the fields, each a reject of its own (empty text): not a file with other field names.
    const input = await csv('all-rejected.jsonl', '{"id":"1","text":""}\n{"id":"2","text":"  "}\n');
    const out = join(dir, 'all-rejected');
    const r = await runEmulated(input, '--out', out);
    const line = oneLine(r.stderr);
    expect(r.code, line).toBe(ExitCode.usage);
    expect(line).toMatch(/nothing embedded: all 2 input rows .* were rejected/);
    // No version became current: the rejects are in the version the run built.
    expect(line).toContain(join(`${out}.versions`, 'v000001', REJECTS_FILE));
    expect(r.stdout).toMatch(/rejected 2/);

    const dry = await runEmulated(input, '--dry-run');
    expect(dry.code, dry.stderr).toBe(ExitCode.usage);
    expect(oneLine(dry.stderr)).toMatch(/all 2 input rows .* would be rejected/);
  });
});

describe('an input whose rows use other field names', () => {
  it('exits 2 naming the fields found and the flags that pick them', async () => {
    const input = await csv(
      'wrong-field.jsonl',
      '{"doc_id":"1","body":"a b c"}\n{"doc_id":"2","body":"d e f"}\n',
    );
    const r = await runEmulated(input, '--out', join(dir, 'wrong-field'));
    const line = oneLine(r.stderr);
    expect(r.code, line).toBe(ExitCode.usage);
    expect(line).toMatch(/"doc_id", "body"/);
    expect(line).toContain('--id-field doc_id --text-field body');
  });
});

describe('job files', () => {
  it('lists every problem of a job file, each with the file and the field', async () => {
    const job = join(dir, 'bad-job.json');
    await writeFile(
      job,
      JSON.stringify({ input: { path: 'x.csv', format: 'xml' }, model: '', concurrency: 0, typo: true }),
    );
    const r = await runCli(['run', job], { EMBEDPIPE_API_KEY: EMULATOR_API_KEY });
    expect(r.code, r.stderr).toBe(ExitCode.usage);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(4);
    for (const line of lines) expect(line).toMatch(new RegExp(`^embedpipe: ${job}: `));
    const fields = lines.map((line) => line.slice(`embedpipe: ${job}: `.length).split(':')[0]);
    expect(fields.sort()).toEqual(['(top level)', 'concurrency', 'input.format', 'model']);
  });

  it("--input with another extension infers the format again instead of keeping the job's", async () => {
    const input = await csv('docs.csv', 'id,text\n1,first document\n2,second document\n3,third\n');
    const r = await runCli([
      'run',
      'jobs/nightly.example.json',
      '--input',
      input,
      '--model',
      'emu/embed-small',
      '--emulator',
      '--dry-run',
      '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ documents: 3, rejects: 0 });
  });
});

describe('--dry-run on an output folder', () => {
  it('says what a re-run would send: nothing, $0, once every planned batch is committed', async () => {
    const input = await csv(
      'finished.csv',
      `id,text\n${Array.from({ length: 40 }, (_, i) => `${i},document number ${i}`).join('\n')}\n`,
    );
    const out = join(dir, 'finished');
    const args = runSmall(input, '--emulator', '--out', out, '--max-inputs', '8');
    const first = await runCli([...args, '--dry-run', '--json']);
    expect(first.code, first.stderr).toBe(0);
    const before = JSON.parse(first.stdout);
    expect(before.toSend).toMatchObject({ batches: before.batches.planned, chunks: before.chunks });
    expect(before.batches.resumed).toBe(0);

    expect((await runCli(args)).code).toBe(0);

    const again = await runCli([...args, '--dry-run', '--json']);
    expect(again.code, again.stderr).toBe(0);
    const after = JSON.parse(again.stdout);
    expect(after.toSend).toMatchObject({ batches: 0, chunks: 0, tokens: 0, costUsd: '0.0000000000' });
    expect(after.batches.resumed).toBe(after.batches.planned);
    expect(after.chunks).toBe(before.chunks); // the totals are still there
    const human = await runCli([...args, '--dry-run']);
    expect(human.stdout).toMatch(/already holds every chunk: a re-run would send nothing \(\$0\)/);
  });
});
