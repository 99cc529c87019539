import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EMULATOR_API_KEY,
  EMULATOR_MANAGEMENT_KEY,
  type RunningEmulator,
  startEmulator,
} from '../../src/emulator/index.js';
import { call, expectEnvelope } from './helpers.js';

let emu: RunningEmulator;
beforeAll(async () => {
  emu = await startEmulator();
});
afterAll(() => emu.close());

const embeddings = { path: '/embeddings', body: { model: 'emu/embed-small', input: 'x' } };
const transcriptions = {
  path: '/audio/transcriptions',
  body: { model: 'emu/whisper-tiny', input_audio: { data: 'AAAA', format: 'mp3' } },
};
const members = { path: '/organization/members' };
const models = { path: '/embeddings/models' };

describe('authentication (spec 5)', () => {
  it.each([embeddings, transcriptions, members, models])(
    'answers 401 without credentials on $path',
    async (endpoint) => {
      const reply = await call(emu, endpoint.path, {
        key: null,
        ...('body' in endpoint ? { body: endpoint.body } : {}),
      });
      expect(expectEnvelope(reply, 401)).toMatch(/Missing credentials/);
    },
  );

  it.each([embeddings, transcriptions, members, models])(
    'answers 401 for an unknown key on $path',
    async (endpoint) => {
      const reply = await call(emu, endpoint.path, {
        key: 'sk-wrong',
        ...('body' in endpoint ? { body: endpoint.body } : {}),
      });
      expect(expectEnvelope(reply, 401)).toBe('Invalid API key');
    },
  );

  it('answers 401 for a malformed Authorization header', async () => {
    const reply = await call(emu, '/embeddings', {
      key: null,
      headers: { authorization: 'Basic abc' },
      body: embeddings.body,
    });
    expectEnvelope(reply, 401);
  });

  it('refuses an ordinary key on /organization/members: a management key is required', async () => {
    const message = expectEnvelope(await call(emu, members.path, { key: EMULATOR_API_KEY }), 401);
    expect(message).toMatch(/management key is required/);
  });

  it.each([embeddings, transcriptions])('refuses a management key on inference ($path)', async (endpoint) => {
    const reply = await call(emu, endpoint.path, { key: EMULATOR_MANAGEMENT_KEY, body: endpoint.body });
    expect(expectEnvelope(reply, 401)).toMatch(/Management keys cannot call inference/);
  });

  it('lets either kind of key list the models', async () => {
    expect((await call(emu, models.path, { key: EMULATOR_API_KEY })).status).toBe(200);
    expect((await call(emu, models.path, { key: EMULATOR_MANAGEMENT_KEY })).status).toBe(200);
  });

  it('ignores the attribution headers', async () => {
    const reply = await call(emu, '/embeddings', {
      body: embeddings.body,
      headers: { 'HTTP-Referer': 'https://example.org', 'X-Service-Title': 'embedpipe tests' },
    });
    expect(reply.status).toBe(200);
  });

  it('labels keys in records: configured names, key<index>, mgmt<index>', async () => {
    const labelled = await startEmulator({
      keys: [{ key: 'k-one', name: 'team-a' }, { key: 'k-two' }],
      managementKeys: ['m-1'],
    });
    try {
      expect(labelled.keyLabel('k-one')).toBe('team-a');
      expect(labelled.keyLabel('k-two')).toBe('key1');
      expect(labelled.keyLabel('m-1')).toBe('mgmt0');
      expect(labelled.keyLabel(EMULATOR_API_KEY)).toBeUndefined();
      await call(labelled, '/embeddings/models', { key: 'k-two' });
      expect(labelled.requests[0]).toMatchObject({ key: 'key1', status: 200 });
    } finally {
      await labelled.close();
    }
  });
});

describe('routing', () => {
  it('answers 404 for an unknown endpoint and 405 for a wrong method, as error envelopes', async () => {
    expect(expectEnvelope(await call(emu, '/chat/completions', { body: {} }), 404)).toMatch(
      /No such endpoint/,
    );
    expectEnvelope(await call(emu, '/embeddings', { method: 'GET' }), 405);
  });

  it('serves only under /v1', async () => {
    const response = await fetch(emu.baseUrl.replace('/v1', '/embeddings/models'), {
      headers: { authorization: `Bearer ${EMULATOR_API_KEY}` },
    });
    expect(response.status).toBe(404);
    await response.text();
  });
});
