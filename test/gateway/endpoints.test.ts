import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { GatewayClient } from '../../src/gateway/client.js';
import { InvalidResponseError } from '../../src/gateway/errors.js';
import type { MemberWire } from '../../src/gateway/wire.js';
import { type ScriptedServer, startScriptedServer } from './scripted-server.js';

const API_KEY = 'sk-endpoints-api-key';
const MANAGEMENT_KEY = 'sk-endpoints-management-key';

let server: ScriptedServer;
let client: GatewayClient;

beforeAll(async () => {
  server = await startScriptedServer();
  client = new GatewayClient({ baseUrl: server.baseUrl, apiKey: API_KEY, managementKey: MANAGEMENT_KEY });
});
afterAll(async () => {
  await client.close();
  await server.close();
});
afterEach(() => {
  server.requests.length = 0;
});

describe('listEmbeddingModels', () => {
  it('parses ids, context lengths, decimal-string prices and modalities, keeping the raw record', async () => {
    const small = {
      id: 'emu/embed-small',
      name: 'Embed Small',
      context_length: 8192,
      pricing: { prompt: '0.00000002', completion: '0', image: '', request: 'n/a' },
      architecture: { input_modalities: ['text'], output_modalities: ['embeddings'] },
      some_future_field: { nested: true },
    };
    server.reply({
      body: {
        data: [
          small,
          { id: 'emu/embed-nocontext' },
          { id: 'emu/null-context', context_length: null, pricing: { prompt: 3e-8 } },
          {
            id: 'emu/vision-embed',
            context_length: '2048',
            architecture: { input_modalities: ['text', 'image', 7] },
          },
        ],
      },
    });
    const models = await client.listEmbeddingModels();
    expect(models).toEqual([
      {
        id: 'emu/embed-small',
        contextLength: 8192,
        pricing: { promptPerToken: 0.00000002, completionPerToken: 0 },
        inputModalities: ['text'],
        raw: small,
      },
      { id: 'emu/embed-nocontext', raw: { id: 'emu/embed-nocontext' } },
      {
        id: 'emu/null-context',
        pricing: { promptPerToken: 3e-8 },
        raw: { id: 'emu/null-context', context_length: null, pricing: { prompt: 3e-8 } },
      },
      expect.objectContaining({
        id: 'emu/vision-embed',
        contextLength: 2048,
        inputModalities: ['text', 'image'],
      }),
    ]);
    expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${API_KEY}`);
  });

  it('refuses a listing without data or with a record without id', async () => {
    server.reply({ body: { models: [] } }, { body: { data: [{ name: 'nameless' }] } });
    await expect(client.listEmbeddingModels()).rejects.toThrow(InvalidResponseError);
    await expect(client.listEmbeddingModels()).rejects.toThrow('data[0] has no model id');
  });
});

describe('transcribe', () => {
  it('sends raw base64 audio, language, top-level temperature and provider.options passthrough', async () => {
    server.reply({
      body: {
        text: 'hello world',
        usage: { cost: 0.0001, seconds: 1.5, total_tokens: 12, input_tokens: 10, output_tokens: 2 },
      },
    });
    const audio = Buffer.from('RIFF....WAVEfmt fake audio bytes');
    const result = await client.transcribe({
      model: 'emu/whisper-tiny',
      audio: { data: audio, format: 'wav' },
      language: 'en',
      temperature: 0,
      providerOptions: { openai: { prompt: 'names: Ada' } },
    });
    expect(result).toEqual({
      text: 'hello world',
      usage: { cost: 0.0001, seconds: 1.5, totalTokens: 12, inputTokens: 10, outputTokens: 2 },
    });
    const [sent] = server.requests;
    expect(sent?.url).toBe('/v1/audio/transcriptions');
    expect(JSON.parse(sent?.body ?? '')).toEqual({
      model: 'emu/whisper-tiny',
      input_audio: { data: audio.toString('base64'), format: 'wav' },
      language: 'en',
      temperature: 0,
      provider: { options: { openai: { prompt: 'names: Ada' } } },
    });
  });

  it('passes base64 strings through and strips a data-URL prefix; omits unset fields', async () => {
    server.reply({ body: { text: 'a' } }, { body: { text: 'b' } });
    expect(await client.transcribe({ model: 'm', audio: { data: 'UklGRg==', format: 'mp3' } })).toEqual({
      text: 'a',
    });
    await client.transcribe({
      model: 'm',
      audio: { data: 'data:audio/mpeg;base64,UklGRg==', format: 'mp3' },
    });
    for (const sent of server.requests) {
      expect(JSON.parse(sent.body)).toEqual({ model: 'm', input_audio: { data: 'UklGRg==', format: 'mp3' } });
    }
  });

  it('refuses a result without text', async () => {
    server.reply({ body: { transcript: 'x' } });
    await expect(client.transcribe({ model: 'm', audio: { data: 'AA==', format: 'wav' } })).rejects.toThrow(
      'gateway 200 invalid response: body has no text',
    );
  });
});

/** A fake organization served page by page from the recorded offset/limit. */
function memberPages(members: MemberWire[], { totalCount = members.length } = {}) {
  return (_req: unknown, res: import('node:http').ServerResponse, recorded: { url: string }) => {
    const query = new URL(recorded.url, 'http://x').searchParams;
    const offset = Number(query.get('offset') ?? 0);
    const limit = Number(query.get('limit') ?? 50);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ data: members.slice(offset, offset + limit), total_count: totalCount }));
  };
}

function someMembers(count: number): MemberWire[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `user_${i}`,
    first_name: i % 3 === 0 ? null : `First${i}`,
    last_name: i % 2 === 0 ? null : `Last${i}`,
    email: `user${i}@example.org`,
    role: i === 0 ? 'org:admin' : 'org:member',
  }));
}

describe('listMembers', () => {
  it('uses the management key and sends offset and limit', async () => {
    const members = someMembers(3);
    server.reply(memberPages(members));
    const page = await client.listMembers({ offset: 1, limit: 2 });
    expect(page).toEqual({ totalCount: 3, members: members.slice(1, 3) });
    const [sent] = server.requests;
    expect(sent?.url).toBe('/v1/organization/members?offset=1&limit=2');
    expect(sent?.headers.authorization).toBe(`Bearer ${MANAGEMENT_KEY}`);
  });

  it('tolerates absent names and an unknown role, but not a member without id or email', async () => {
    server.reply(
      { body: { data: [{ id: 'u1', email: 'u1@x.org', role: 'org:owner' }], total_count: 1 } },
      { body: { data: [{ id: 'u2', first_name: 'No', last_name: 'Email' }], total_count: 1 } },
    );
    expect((await client.listMembers()).members).toEqual([
      { id: 'u1', first_name: null, last_name: null, email: 'u1@x.org', role: 'org:owner' },
    ]);
    await expect(client.listMembers()).rejects.toThrow('data[0] is not a member (needs id and email)');
  });

  it('sends no query when none is given', async () => {
    server.reply(memberPages(someMembers(1)));
    await client.listMembers();
    expect(server.requests[0]?.url).toBe('/v1/organization/members');
  });

  it.each([
    [{ offset: -1 }, /offset must be an integer ≥ 0, got -1/],
    [{ offset: 1.5 }, /offset/],
    [{ offset: Number.NaN }, /offset/],
    [{ limit: 0 }, /limit must be an integer from 1 to 100, got 0/],
    [{ limit: 101 }, /got 101/],
    [{ limit: 2.5 }, /limit/],
  ])('refuses %o before any request', async (query, message) => {
    await expect(client.listMembers(query)).rejects.toThrow(UsageError);
    await expect(client.listMembers(query)).rejects.toThrow(message);
    expect(server.requests).toHaveLength(0);
  });

  it('accepts the bounds 0, 1 and 100', async () => {
    server.reply(memberPages([]), memberPages([]));
    await client.listMembers({ offset: 0, limit: 1 });
    await client.listMembers({ limit: 100 });
    expect(server.requests).toHaveLength(2);
  });

  it('refuses a page without a usable total_count', async () => {
    server.reply({ body: { data: [] } });
    await expect(client.listMembers()).rejects.toThrow('total_count is undefined, not a count');
  });
});

describe('iterateMembers', () => {
  async function collect(pageSize?: number) {
    const ids: string[] = [];
    for await (const member of client.iterateMembers(pageSize === undefined ? {} : { pageSize }))
      ids.push(member.id);
    return ids;
  }

  it('walks every page and stops at total_count', async () => {
    const members = someMembers(7);
    server.reply(...Array(3).fill(memberPages(members)));
    expect(await collect(3)).toEqual(members.map((m) => m.id));
    expect(server.requests.map((r) => r.url)).toEqual([
      '/v1/organization/members?offset=0&limit=3',
      '/v1/organization/members?offset=3&limit=3',
      '/v1/organization/members?offset=6&limit=3',
    ]);
  });

  it('asks for no extra page when total_count is an exact multiple of the page size', async () => {
    server.reply(...Array(2).fill(memberPages(someMembers(4))));
    expect(await collect(2)).toHaveLength(4);
    expect(server.requests).toHaveLength(2);
  });

  it('stops on an empty page even if total_count promises more', async () => {
    server.reply(...Array(3).fill(memberPages(someMembers(3), { totalCount: 10 })));
    expect(await collect(2)).toHaveLength(3);
    expect(server.requests).toHaveLength(3);
  });

  it('makes one request for an empty organization, with the default page size', async () => {
    server.reply(memberPages([]));
    expect(await collect()).toEqual([]);
    expect(server.requests.map((r) => r.url)).toEqual(['/v1/organization/members?offset=0&limit=50']);
  });

  it('refuses a bad page size before any request', async () => {
    await expect(collect(0)).rejects.toThrow(UsageError);
    await expect(collect(500)).rejects.toThrow(UsageError);
    expect(server.requests).toHaveLength(0);
  });

  it('needs the management key, not the API key', async () => {
    const inferenceOnly = new GatewayClient({ baseUrl: server.baseUrl, apiKey: API_KEY });
    const iterator = inferenceOnly.iterateMembers();
    await expect(iterator.next()).rejects.toThrow(/EMBEDPIPE_MANAGEMENT_KEY is not set/);
    await inferenceOnly.close();
    expect(server.requests).toHaveLength(0);
  });
});
