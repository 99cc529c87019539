/**
 * The client against the local gateway emulator, over real HTTP: every endpoint, the error classes
 * the emulator's faults produce, and the retry layer honouring its Retry-After.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  EMULATOR_API_KEY,
  EMULATOR_MANAGEMENT_KEY,
  type EmulatorOptions,
  embeddingFor,
  type RunningEmulator,
  startEmulator,
} from '../../src/emulator/index.js';
import { multimodalText } from '../../src/emulator/vectors.js';
import { ExitCode } from '../../src/errors.js';
import { GatewayClient } from '../../src/gateway/client.js';
import {
  AuthenticationError,
  BadGatewayError,
  BadRequestError,
  ConnectionError,
  GatewayError,
  GatewayTimeoutError,
  InsufficientCreditsError,
  InternalServerError,
  InvalidResponseError,
  NotFoundError,
  ProviderOverloadedError,
  RateLimitError,
  ServiceUnavailableError,
} from '../../src/gateway/errors.js';
import { retrying } from '../../src/gateway/retrying.js';
import type { MultimodalBlock } from '../../src/gateway/wire.js';

let emulator: RunningEmulator;
let client: GatewayClient;

beforeAll(async () => {
  emulator = await startEmulator();
  client = new GatewayClient({
    baseUrl: emulator.baseUrl,
    apiKey: EMULATOR_API_KEY,
    managementKey: EMULATOR_MANAGEMENT_KEY,
  });
});
afterAll(async () => {
  await client.close();
  await emulator.close();
});

function useEmulator(options: EmulatorOptions = {}) {
  beforeEach(() => emulator.reset(options));
}

async function failure(promise: Promise<unknown>): Promise<GatewayError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GatewayError);
  return error as GatewayError;
}

/** One second of 16 kHz mono 16-bit silence, as a WAV file. */
function wavSecond(): Buffer {
  const data = Buffer.alloc(32_000);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVEfmt ', 8, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(16_000, 24);
  header.writeUInt32LE(32_000, 28); // byte rate
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

const TEXTS = ['the quick brown fox', 'jumps over', 'the lazy dog', 'ünïcödé and emoji 🚀'];

describe('embeddings against the emulator', () => {
  describe('normal providers', () => {
    useEmulator();

    it.each(['float', 'base64'] as const)(
      'returns the exact emulator vectors with encoding_format %s',
      async (format) => {
        const result = await client.embeddings({
          model: 'emu/embed-small',
          input: TEXTS,
          encoding_format: format,
        });
        expect(result.dims).toBe(384);
        expect(result.encoding).toBe(format);
        expect(result.vectors).toEqual(TEXTS.map((text) => embeddingFor('emu/embed-small', text, 384)));
        expect(result.usage?.promptTokens).toBeGreaterThan(0);
        expect(result.provider).toEqual(expect.any(String));
      },
    );

    it('embeds a single string with the large model', async () => {
      const result = await client.embeddings({ model: 'emu/embed-large', input: 'one' });
      expect(result.vectors).toEqual([embeddingFor('emu/embed-large', 'one', 1536)]);
    });

    it('embeds multimodal blocks with the vision model', async () => {
      const blocks: MultimodalBlock[] = [
        { content: [{ type: 'text', text: 'a red square' }] },
        {
          content: [
            { type: 'text', text: 'caption' },
            { type: 'image_url', image_url: { url: 'https://example.org/cat.png' } },
          ],
        },
      ];
      const result = await client.embeddings({
        model: 'emu/vision-embed',
        input: blocks,
        encoding_format: 'float',
      });
      expect(result.dims).toBe(512);
      expect(result.vectors).toEqual(
        blocks.map((block) => embeddingFor('emu/vision-embed', multimodalText(block.content), 512)),
      );
    });

    it('answers 404 for an unknown model and 400 for a bad request', async () => {
      const missing = await failure(client.embeddings({ model: 'emu/no-such-model', input: 'x' }));
      expect(missing).toBeInstanceOf(NotFoundError);
      expect(missing.exitCode).toBe(ExitCode.usage);
      const bad = await failure(
        client.embeddings({ model: 'emu/embed-small', input: 'x', encoding_format: 'int8' as 'float' }),
      );
      expect(bad).toBeInstanceOf(BadRequestError);
      expect(bad.retryable).toBe(false);
    });
  });

  describe('a provider that reorders data', () => {
    useEmulator({ shuffleData: true });

    it('places vectors by index', async () => {
      const result = await client.embeddings({ model: 'emu/embed-small', input: TEXTS });
      expect(result.vectors).toEqual(TEXTS.map((text) => embeddingFor('emu/embed-small', text, 384)));
    });
  });

  describe('a provider that omits index', () => {
    useEmulator({ omitIndex: true });

    it('places vectors by position', async () => {
      const result = await client.embeddings({
        model: 'emu/embed-small',
        input: TEXTS,
        encoding_format: 'float',
      });
      expect(result.vectors).toEqual(TEXTS.map((text) => embeddingFor('emu/embed-small', text, 384)));
    });
  });

  describe('a provider that answers base64 with empty data', () => {
    useEmulator({ base64Mode: 'empty' });

    it('is a retryable InvalidResponseError, never success', async () => {
      const error = await failure(
        client.embeddings({ model: 'emu/embed-small', input: TEXTS, encoding_format: 'base64' }),
      );
      expect(error).toBeInstanceOf(InvalidResponseError);
      expect(error.retryable).toBe(true);
      expect(error.message).toContain('data is empty (expected 4 embeddings)');
      expect((error as InvalidResponseError).emptyData).toBe(true);
    });
  });

  describe('a provider that ignores base64', () => {
    useEmulator({ base64Mode: 'floats' });

    it('still decodes, reporting what actually came back', async () => {
      const result = await client.embeddings({
        model: 'emu/embed-small',
        input: TEXTS,
        encoding_format: 'base64',
      });
      expect(result.encoding).toBe('float');
      expect(result.vectors[0]).toEqual(embeddingFor('emu/embed-small', TEXTS[0]!, 384));
    });
  });
});

describe('models, transcription and members against the emulator', () => {
  useEmulator();

  it('lists the embedding models', async () => {
    const models = await client.listEmbeddingModels();
    const byId = new Map(models.map((model) => [model.id, model]));
    expect([...byId.keys()]).toEqual(
      expect.arrayContaining([
        'emu/embed-small',
        'emu/embed-large',
        'emu/embed-nocontext',
        'emu/vision-embed',
      ]),
    );
    expect(byId.get('emu/embed-small')?.contextLength).toBe(512);
    expect(byId.get('emu/embed-small')?.pricing?.promptPerToken).toBe(0.00000002);
    expect(byId.get('emu/embed-nocontext')?.contextLength).toBeUndefined();
    expect(byId.get('emu/vision-embed')?.inputModalities).toContain('image');
  });

  it('transcribes a WAV file', async () => {
    const result = await client.transcribe({
      model: 'emu/whisper-tiny',
      audio: { data: wavSecond(), format: 'wav' },
      language: 'en',
      temperature: 0,
      providerOptions: { alpha: { beam_size: 1 } },
    });
    expect(result.text).toMatch(/^[A-Z].*\.$/);
    expect(result.usage?.seconds).toBe(1);
    expect(result.usage?.cost).toBeGreaterThan(0);
  });

  it('refuses a transcription with a bad format (400)', async () => {
    const error = await failure(
      client.transcribe({ model: 'emu/whisper-tiny', audio: { data: wavSecond(), format: 'aiff' } }),
    );
    expect(error).toBeInstanceOf(BadRequestError);
  });

  it('lists members page by page', async () => {
    const page = await client.listMembers({ offset: 230, limit: 100 });
    expect(page.totalCount).toBe(237);
    expect(page.members).toHaveLength(7);
    const all = [];
    for await (const member of client.iterateMembers({ pageSize: 100 })) all.push(member);
    expect(all).toHaveLength(237);
    expect(new Set(all.map((m) => m.id)).size).toBe(237);
    expect(all.some((m) => m.first_name === null)).toBe(true);
    expect(all[0]?.role).toBe('org:admin');
    const memberRequests = emulator.requests.filter((r) => r.path === '/organization/members');
    expect(memberRequests).toHaveLength(4);
  });

  it('keeps the two kinds of key apart', async () => {
    const managementOnly = new GatewayClient({ baseUrl: emulator.baseUrl, apiKey: EMULATOR_MANAGEMENT_KEY });
    const apiOnly = new GatewayClient({ baseUrl: emulator.baseUrl, managementKey: EMULATOR_API_KEY });
    const wrongKey = new GatewayClient({ baseUrl: emulator.baseUrl, apiKey: 'emu-wrong-key' });
    // One at a time: a call made before the previous one is awaited may fail unheard.
    for (const call of [
      () => managementOnly.embeddings({ model: 'emu/embed-small', input: 'x' }),
      () => apiOnly.listMembers(),
      () => wrongKey.listEmbeddingModels(),
    ]) {
      const error = await failure(call());
      expect(error).toBeInstanceOf(AuthenticationError);
      expect(error.exitCode).toBe(ExitCode.authentication);
      expect(error.message).not.toContain('emu-');
    }
    await Promise.all([managementOnly.close(), apiOnly.close(), wrongKey.close()]);
  });
});

describe('faults against the emulator', () => {
  describe('each scripted fault', () => {
    useEmulator({ faults: { script: ['429', '500', '502', '503', '524', '529', 'reset', 'empty'] } });

    it('becomes its error class, every one retryable', async () => {
      const expected = [
        RateLimitError,
        InternalServerError,
        BadGatewayError,
        ServiceUnavailableError,
        GatewayTimeoutError,
        ProviderOverloadedError,
        ConnectionError,
        InvalidResponseError,
      ];
      for (const ErrorClass of expected) {
        const error = await failure(client.embeddings({ model: 'emu/embed-small', input: TEXTS }));
        expect(error).toBeInstanceOf(ErrorClass);
        expect(error.retryable).toBe(true);
      }
      const rateLimited = emulator.requests[0];
      expect(rateLimited?.status).toBe(429);
      await expect(client.embeddings({ model: 'emu/embed-small', input: TEXTS })).resolves.toMatchObject({
        dims: 384,
      });
    });
  });

  describe.each(['ms', 'seconds', 'http-date'] as const)('Retry-After as %s', (format) => {
    useEmulator({ retryAfterFormat: format, faults: { script: ['429'], retryAfterSeconds: 0.05 } });

    it('is honoured by retrying() with a shared gate: no request on the key before the instant', async () => {
      // The shared gate is the client's own: retrying() only goes again, the client holds it.
      const others: Promise<unknown>[] = [];
      const gateway = retrying(client, {
        baseDelayMs: 1,
        maxDelayMs: 5,
        // Once the 429 is in, the rest of the run keeps sending: the gate must hold them all.
        onRetry: () => {
          for (const text of TEXTS.slice(1))
            others.push(gateway.embeddings({ model: 'emu/embed-small', input: text }));
        },
      });
      const first = await gateway.embeddings({ model: 'emu/embed-small', input: TEXTS[0]! });
      await Promise.all(others);
      expect(first.dims).toBe(384);
      expect(others).toHaveLength(3);
      expect(emulator.stats.faults['429']).toBe(1);
      expect(emulator.stats.retryAfterViolations).toEqual({});
    });
  });

  describe('an exhausted credit', () => {
    useEmulator({ keys: [{ key: EMULATOR_API_KEY, credits: 0 }] });

    it('is a non-retryable InsufficientCreditsError with the credits exit code', async () => {
      const error = await failure(client.embeddings({ model: 'emu/embed-small', input: TEXTS }));
      expect(error).toBeInstanceOf(InsufficientCreditsError);
      expect(error.retryable).toBe(false);
      expect(error.exitCode).toBe(ExitCode.credits);
    });
  });
});
