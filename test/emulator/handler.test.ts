/** The emulator as a Fetch handler, called in process: no socket, no port. */
import { describe, expect, it } from 'vitest';
import {
  ConnectionReset,
  createEmulator,
  EMULATOR_API_KEY,
  type Emulator,
  embeddingFor,
  startEmulator,
} from '../../src/emulator/index.js';

const auth = { authorization: `Bearer ${EMULATOR_API_KEY}` };

function post(path: string, body: unknown, headers: Record<string, string> = auth): Request {
  return new Request(`http://emu/v1${path}`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

const embedRequest = (input: string | string[]) => post('/embeddings', { model: 'emu/embed-small', input });

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON shapes
async function json(response: Response): Promise<any> {
  expect(response.headers.get('content-type')).toBe('application/json');
  return response.json();
}

async function withHandler(
  options: Parameters<typeof createEmulator>[0],
  body: (emu: Emulator) => Promise<void>,
) {
  const emu = createEmulator(options);
  try {
    await body(emu);
  } finally {
    await emu.close();
  }
}

describe('the Fetch handler, in process', () => {
  it('lists the models', async () => {
    await withHandler({}, async (emu) => {
      const response = await emu.handle(new Request('http://emu/v1/embeddings/models', { headers: auth }));
      expect(response.status).toBe(200);
      const ids = (await json(response)).data.map((model: { id: string }) => model.id);
      expect(ids).toContain('emu/embed-small');
      expect(emu.requests[0]).toMatchObject({ method: 'GET', path: '/embeddings/models', status: 200 });
    });
  });

  it('embeds, with the vectors of the spec, and counts the request', async () => {
    await withHandler({}, async (emu) => {
      const response = await emu.handle(embedRequest(['a', 'b']));
      expect(response.status).toBe(200);
      const body = await json(response);
      expect(body.data).toHaveLength(2);
      const dims = body.data[0].embedding.length;
      expect(Float32Array.from(body.data[1].embedding)).toEqual(embeddingFor('emu/embed-small', 'b', dims));
      expect(emu.stats).toMatchObject({ requests: 1, inputs: 2, inFlight: 0, byStatus: { '200': 1 } });
    });
  });

  it('answers 401 with the error envelope without a key or with an unknown one', async () => {
    await withHandler({}, async (emu) => {
      const refused = await emu.handle(post('/embeddings', { model: 'emu/embed-small', input: 'x' }, {}));
      expect(refused.status).toBe(401);
      expect(await json(refused)).toEqual({
        error: { code: 401, message: "Missing credentials: send 'Authorization: Bearer <API key>'" },
        user_id: null,
      });
      const wrong = await emu.handle(
        new Request('http://emu/v1/embeddings/models', { headers: { authorization: 'Bearer sk-wrong' } }),
      );
      expect((await json(wrong)).error).toEqual({ code: 401, message: 'Invalid API key' });
    });
  });

  it('answers 429 with Retry-After, from a full window and from a provider fault', async () => {
    const options = {
      keys: [{ key: EMULATOR_API_KEY, limits: { requestsPerMinute: 1 } }],
      faults: { script: ['429' as const], retryAfterSeconds: 2 },
    };
    await withHandler(options, async (emu) => {
      const faulted = await emu.handle(embedRequest('a'));
      expect(faulted.status).toBe(429);
      expect(faulted.headers.get('retry-after')).toBe('2');
      expect((await json(faulted)).error.metadata).toEqual({ provider_name: 'alpha' });

      const full = await emu.handle(embedRequest('b'));
      expect(full.status).toBe(429);
      // The faulted request took the window's one slot for 60 s.
      expect(full.headers.get('retry-after')).toBe('60');
      expect((await json(full)).error.message).toMatch(/1 requests per minute/);
    });
  });

  it("rejects with ConnectionReset for the socket-only 'reset' fault; the next request succeeds", async () => {
    await withHandler({ faults: { script: ['reset'] } }, async (emu) => {
      const reset = emu.handle(embedRequest('a'));
      await expect(reset).rejects.toBeInstanceOf(ConnectionReset);
      await expect(reset).rejects.toMatchObject({ code: 'ECONNRESET' });
      expect((await emu.handle(embedRequest('a'))).status).toBe(200);
      expect(emu.requests.map((r) => r.status)).toEqual(['reset', 200]);
      expect(emu.requests[0]?.fault).toBe('reset');
    });
  });

  it('rejects requests still waiting when closed, and any after', async () => {
    const emu = createEmulator({ faults: { script: ['slow'], slowMs: 10_000 } });
    const waiting = emu.handle(embedRequest('a'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const started = performance.now();
    await emu.close();
    await expect(waiting).rejects.toBeInstanceOf(ConnectionReset);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(emu.stats.byStatus).toEqual({ reset: 1 });
    await expect(emu.handle(embedRequest('b'))).rejects.toBeInstanceOf(ConnectionReset);
  });

  it('answers in process exactly as over the socket', async () => {
    const emu = await startEmulator();
    try {
      const path = '/embeddings/models';
      const overSocket = await fetch(`${emu.baseUrl}${path}`, { headers: auth });
      const inProcess = await emu.handle(new Request(`http://emu/v1${path}`, { headers: auth }));
      expect(inProcess.status).toBe(overSocket.status);
      expect(await inProcess.text()).toBe(await overSocket.text());
      expect(emu.stats.requests).toBe(2);
    } finally {
      await emu.close();
    }
  });
});
