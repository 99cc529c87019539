import { countTokens } from 'gpt-tokenizer/encoding/cl100k_base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { wavSeconds } from '../../src/emulator/transcription.js';
import { call, expectEnvelope } from './helpers.js';

/** A PCM WAV: 16 kHz, mono, 16-bit (32,000 bytes per second), with an extra chunk before the data. */
function wav(seconds: number, fill = 0): Buffer {
  const data = Buffer.alloc(Math.round(seconds * 32_000), fill);
  const fmt = Buffer.alloc(24);
  fmt.write('fmt ', 0, 'latin1');
  fmt.writeUInt32LE(16, 4);
  fmt.writeUInt16LE(1, 8); // PCM
  fmt.writeUInt16LE(1, 10); // channels
  fmt.writeUInt32LE(16_000, 12); // sample rate
  fmt.writeUInt32LE(32_000, 16); // byte rate
  fmt.writeUInt16LE(2, 20); // block align
  fmt.writeUInt16LE(16, 22); // bits per sample
  const list = Buffer.concat([
    Buffer.from('LIST', 'latin1'),
    Buffer.from([3, 0, 0, 0]),
    Buffer.from('abc\0', 'latin1'),
  ]);
  const dataHeader = Buffer.alloc(8);
  dataHeader.write('data', 0, 'latin1');
  dataHeader.writeUInt32LE(data.length, 4);
  const body = Buffer.concat([Buffer.from('WAVE', 'latin1'), fmt, list, dataHeader, data]);
  const riff = Buffer.alloc(8);
  riff.write('RIFF', 0, 'latin1');
  riff.writeUInt32LE(body.length, 4);
  return Buffer.concat([riff, body]);
}

let emu: RunningEmulator;
beforeAll(async () => {
  emu = await startEmulator();
});
afterAll(() => emu.close());

const transcribe = (body: Record<string, unknown>) => call(emu, '/audio/transcriptions', { body });
const audio = (bytes: Buffer, format = 'wav') => ({ data: bytes.toString('base64'), format });

describe('POST /audio/transcriptions', () => {
  it('transcribes a WAV deterministically, with its duration from the RIFF header, and usage', async () => {
    const body = { model: 'emu/whisper-tiny', input_audio: audio(wav(2)), language: 'en', temperature: 0 };
    const reply = await transcribe(body);
    expect(reply.status).toBe(200);
    const { text, usage } = reply.body;
    expect(text).toMatch(/^[A-Z][a-z ]+\.$/);
    expect(text.split(' ')).toHaveLength(5); // 2.5 words per second
    expect(usage).toEqual({
      seconds: 2,
      cost: 2 * 0.0001,
      input_tokens: 20,
      output_tokens: countTokens(text),
      total_tokens: 20 + countTokens(text),
    });
    expect((await transcribe(body)).body.text).toBe(text);
    const other = await transcribe({ ...body, input_audio: audio(wav(2, 1)) });
    expect(other.body.text).not.toBe(text);
  });

  it('grows the transcript with the duration; compressed formats count 16,000 bytes per second', async () => {
    const reply = await transcribe({
      model: 'emu/whisper-tiny',
      input_audio: audio(Buffer.alloc(160_000, 7), 'mp3'),
    });
    expect(reply.status).toBe(200);
    expect(reply.body.usage.seconds).toBe(10);
    expect(reply.body.text.split(' ')).toHaveLength(25);
  });

  it('accepts provider passthrough under provider.options', async () => {
    const reply = await transcribe({
      model: 'emu/whisper-tiny',
      input_audio: audio(wav(1)),
      provider: { options: { alpha: { prompt: 'names: Ada' } } },
    });
    expect(reply.status).toBe(200);
    expect(emu.stats.byProvider['alpha']).toBeGreaterThan(0);
  });

  it.each([
    ['missing input_audio', { model: 'emu/whisper-tiny' }, /input_audio is required/],
    ['missing model', { input_audio: { data: 'AAAA', format: 'mp3' } }, /model is required/],
    [
      'invalid base64',
      { model: 'emu/whisper-tiny', input_audio: { data: 'not base64!', format: 'mp3' } },
      /base64/,
    ],
    [
      'a data URL',
      { model: 'emu/whisper-tiny', input_audio: { data: 'data:audio/wav;base64,AAAA', format: 'wav' } },
      /raw base64/,
    ],
    [
      'an unknown format',
      { model: 'emu/whisper-tiny', input_audio: { data: 'AAAA', format: 'aiff' } },
      /format must be one of/,
    ],
    [
      'a WAV without a RIFF header',
      { model: 'emu/whisper-tiny', input_audio: { data: 'AAAAAAAAAAAAAAAA', format: 'wav' } },
      /not a WAV/,
    ],
    [
      'a bad language',
      { model: 'emu/whisper-tiny', input_audio: { data: 'AAAA', format: 'mp3' }, language: 'english' },
      /ISO-639-1/,
    ],
    [
      'a bad temperature',
      { model: 'emu/whisper-tiny', input_audio: { data: 'AAAA', format: 'mp3' }, temperature: 'hot' },
      /temperature/,
    ],
  ])('answers 400 for %s', async (_name, body, pattern) => {
    expect(expectEnvelope(await transcribe(body), 400)).toMatch(pattern);
  });

  it('answers 404 for an unknown model and for an embedding model', async () => {
    const input_audio = { data: 'AAAA', format: 'mp3' };
    expect(expectEnvelope(await transcribe({ model: 'emu/nope', input_audio }), 404)).toMatch(/not found/);
    expect(expectEnvelope(await transcribe({ model: 'emu/embed-small', input_audio }), 404)).toMatch(
      /not a transcription model/,
    );
  });

  it('answers 402 when the key cannot pay for the audio', async () => {
    const poor = await startEmulator({ keys: [{ key: 'k', credits: 0.00005 }] });
    try {
      const reply = await call(poor, '/audio/transcriptions', {
        key: 'k',
        body: { model: 'emu/whisper-tiny', input_audio: audio(wav(1)) },
      });
      expectEnvelope(reply, 402);
    } finally {
      await poor.close();
    }
  });
});

describe('wavSeconds', () => {
  it('counts only the data really present when a streamed WAV leaves the size at its maximum', () => {
    const file = wav(1);
    file.writeUInt32LE(0xffffffff, file.length - 32_000 - 4);
    expect(wavSeconds(file)).toBe(1);
  });
});
