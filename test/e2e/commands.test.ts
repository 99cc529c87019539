/** The gateway commands as a user runs them: built CLI, keys from the environment, emulator over HTTP. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EMULATOR_API_KEY,
  EMULATOR_MANAGEMENT_KEY,
  embeddingFor,
  type RunningEmulator,
  startEmulator,
} from '../../src/emulator/index.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { tempFolder } from '../helpers/temp.js';

let emulator: RunningEmulator;
const dir = await tempFolder('embedpipe-cli-');

beforeAll(async () => {
  emulator = await startEmulator({ members: 237 });
});
afterAll(async () => {
  await emulator.close();
});

const api = () => ({ EMBEDPIPE_BASE_URL: emulator.baseUrl, EMBEDPIPE_API_KEY: EMULATOR_API_KEY });
const mgmt = () => ({
  EMBEDPIPE_BASE_URL: emulator.baseUrl,
  EMBEDPIPE_MANAGEMENT_KEY: EMULATOR_MANAGEMENT_KEY,
});

/** A one-second 16 kHz mono PCM WAV. */
function wav(seconds: number): Buffer {
  const rate = 16_000;
  const data = Buffer.alloc(rate * 2 * seconds);
  for (let i = 0; i < rate * seconds; i++) data.writeInt16LE(Math.round(Math.sin(i / 10) * 8000), i * 2);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(rate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

const oneLineError = (stderr: string) => {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^embedpipe: /);
  return lines[0]!;
};

describe('embedpipe models / embed / transcribe / members', () => {
  it('models --json lists the embedding models with their records', async () => {
    const r = await runCli(['models', '--json'], api());
    expect(r.code, r.stderr).toBe(0);
    const models = JSON.parse(r.stdout);
    expect(models.map((m: { id: string }) => m.id)).toContain('emu/embed-large');
    expect(models.find((m: { id: string }) => m.id === 'emu/embed-nocontext').context_length).toBeUndefined();
    const table = await runCli(['models'], api());
    expect(table.stdout).toMatch(/^MODEL\s+CONTEXT/);
    expect(table.stdout).toMatch(/emu\/embed-small\s+512/);
  });

  it('embed prints the gateway vector', async () => {
    const r = await runCli(['embed', 'hello', '--model', 'emu/embed-small', '--json'], api());
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.dims).toBe(384);
    expect(Float32Array.from(out.embedding)).toEqual(embeddingFor('emu/embed-small', 'hello', 384));
    const human = await runCli(['embed', 'hello', '--model', 'emu/embed-small'], api());
    expect(human.stdout).toMatch(/384 dims/);
  });

  it('transcribe reads an audio file and prints its text', async () => {
    const file = join(dir, 'sample.wav');
    await writeFile(file, wav(2));
    const r = await runCli(
      ['transcribe', file, '--model', 'emu/whisper-tiny', '--language', 'en', '--json'],
      api(),
    );
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.text).toEqual(expect.any(String));
    expect(out.usage.seconds).toBeCloseTo(2, 1);
    const again = await runCli(['transcribe', file, '--model', 'emu/whisper-tiny'], api());
    expect(again.stdout.trim()).toBe(out.text);
  });

  it('members --all --json returns every member of a multi-page organization', async () => {
    const r = await runCli(['members', '--all', '--json'], mgmt());
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.data).toHaveLength(237);
    expect(new Set(out.data.map((m: { id: string }) => m.id)).size).toBe(237);
    const page = JSON.parse(
      (await runCli(['members', '--offset', '230', '--limit', '100', '--json'], mgmt())).stdout,
    );
    expect(page).toMatchObject({ total_count: 237 });
    expect(page.data).toHaveLength(7);
  });

  it('fails with one clear line and a distinct exit code on every bad case', async () => {
    const cases: Array<[string[], Record<string, string>, number, RegExp]> = [
      [['models'], { EMBEDPIPE_BASE_URL: emulator.baseUrl }, 3, /EMBEDPIPE_API_KEY is not set/],
      [
        ['models'],
        { EMBEDPIPE_BASE_URL: emulator.baseUrl, EMBEDPIPE_API_KEY: 'wrong-key-123456' },
        3,
        /authentication failed/,
      ],
      [['members'], api(), 3, /EMBEDPIPE_MANAGEMENT_KEY is not set/],
      [
        ['members'],
        { EMBEDPIPE_BASE_URL: emulator.baseUrl, EMBEDPIPE_MANAGEMENT_KEY: EMULATOR_API_KEY },
        3,
        /management key/,
      ],
      [['members', '--limit', '101'], mgmt(), 2, /--limit.*1 to 100/],
      [['members', '--offset', '-1'], mgmt(), 2, /--offset/],
      [['embed', 'x', '--model', 'emu/nope'], api(), 2, /emu\/nope|not found/i],
      [
        ['embed', 'x', '--model', 'emu/embed-small'],
        { EMBEDPIPE_BASE_URL: emulator.baseUrl, EMBEDPIPE_API_KEY: EMULATOR_MANAGEMENT_KEY },
        3,
        /authentication failed/,
      ],
      [
        ['transcribe', join(dir, 'missing.wav'), '--model', 'emu/whisper-tiny'],
        api(),
        2,
        /audio file not found/,
      ],
      [['embed', 'x'], api(), 2, /--model/],
      [['frobnicate'], api(), 2, /unknown command/],
    ];
    for (const [args, env, code, pattern] of cases) {
      const r = await runCli(args, env);
      const line = oneLineError(r.stderr);
      expect(line, args.join(' ')).toMatch(pattern);
      expect(r.code, `${args.join(' ')}: ${line}`).toBe(code);
      for (const secret of [EMULATOR_API_KEY, EMULATOR_MANAGEMENT_KEY, 'wrong-key-123456']) {
        expect(r.stderr).not.toContain(secret);
      }
    }
  });

  it('gateway starts the emulator and prints its base URL', async () => {
    const child = spawnCli(['gateway', '--port', '0']);
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (d: Buffer) => resolve(d.toString().trim()));
      child.on('error', reject);
      child.on('exit', (code) => reject(new Error(`gateway exited with ${code}`)));
    });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const r = await runCli(['models', '--json'], {
      EMBEDPIPE_BASE_URL: url,
      EMBEDPIPE_API_KEY: EMULATOR_API_KEY,
    });
    expect(r.code, r.stderr).toBe(0);
    child.kill('SIGTERM');
    expect((await child.result).code).toBe(0);
  });
});
