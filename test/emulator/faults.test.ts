import { describe, expect, it } from 'vitest';
import { type EmulatorOptions, startEmulator } from '../../src/emulator/index.js';
import { call, embed, expectEnvelope, withEmulator } from './helpers.js';

const request = { model: 'emu/embed-small', input: ['a', 'b'] };

describe('scripted faults', () => {
  it('consumes the script one entry per request, in order, with error envelopes and Retry-After', async () => {
    const options: EmulatorOptions = {
      faults: { script: ['500', '502', 'ok', '503', '524', '529', '429'], retryAfterSeconds: 2 },
    };
    await withEmulator(options, async (emu) => {
      const replies = [];
      for (let i = 0; i < 8; i++) replies.push(await embed(emu, request));
      expect(replies.map((r) => r.status)).toEqual([500, 502, 200, 503, 524, 529, 429, 200]);
      for (const reply of replies.filter((r) => r.status !== 200)) expectEnvelope(reply, reply.status);
      const [e500, e502, , e503, e524, e529, e429] = replies;
      expect(e500!.body.error.metadata).toBeUndefined();
      for (const reply of [e502, e524, e529, e429])
        expect(reply!.body.error.metadata.provider_name).toBe('alpha');
      expect(typeof e502!.body.error.metadata.raw).toBe('string');
      expect(e503!.headers.get('retry-after')).toBe('2');
      expect(e429!.headers.get('retry-after')).toBe('2');
      expect(e500!.headers.get('retry-after')).toBeNull();
      expect(emu.stats.faults).toEqual({ '500': 1, '502': 1, '503': 1, '524': 1, '529': 1, '429': 1 });
      expect(emu.requests.map((r) => r.fault)).toEqual([
        '500',
        '502',
        undefined,
        '503',
        '524',
        '529',
        '429',
        undefined,
      ]);
    });
  });

  it('charges nothing for a faulted request', async () => {
    await withEmulator({ faults: { script: ['500', 'empty'] } }, async (emu) => {
      await embed(emu, request);
      await embed(emu, request);
      expect(emu.stats.spend).toEqual({});
      expect(emu.stats.inputs).toBe(0);
    });
  });

  it("'empty' answers 200 with data: []", async () => {
    await withEmulator({ faults: { script: ['empty'] } }, async (emu) => {
      const reply = await embed(emu, request);
      expect(reply.status).toBe(200);
      expect(reply.body.data).toEqual([]);
    });
  });

  it("'reset' destroys the connection without an answer; the next request succeeds", async () => {
    await withEmulator({ faults: { script: ['reset'] } }, async (emu) => {
      await expect(embed(emu, request)).rejects.toThrow();
      expect((await embed(emu, request)).status).toBe(200);
      expect(emu.stats.byStatus['reset']).toBe(1);
      expect(emu.requests[0]).toMatchObject({ status: 'reset', fault: 'reset' });
    });
  });

  it("'slow' answers successfully after slowMs", async () => {
    await withEmulator({ faults: { script: ['slow'], slowMs: 60 } }, async (emu) => {
      const started = performance.now();
      expect((await embed(emu, request)).status).toBe(200);
      expect(performance.now() - started).toBeGreaterThanOrEqual(55);
    });
  });

  it('does not consume the script on requests that fail before reaching a provider', async () => {
    await withEmulator({ faults: { script: ['500'] } }, async (emu) => {
      expect((await embed(emu, { model: 'emu/embed-small' })).status).toBe(400);
      expect((await embed(emu, request)).status).toBe(500);
    });
  });

  it('applies only to the configured paths', async () => {
    const audio = {
      model: 'emu/whisper-tiny',
      input_audio: { data: Buffer.alloc(16_000).toString('base64'), format: 'mp3' },
    };
    await withEmulator({ faults: { script: ['503', '503'] } }, async (emu) => {
      expect((await call(emu, '/audio/transcriptions', { body: audio })).status).toBe(503);
      expect((await call(emu, '/embeddings/models')).status).toBe(200);
    });
    await withEmulator({ faults: { script: ['503'], paths: ['/embeddings'] } }, async (emu) => {
      expect((await call(emu, '/audio/transcriptions', { body: audio })).status).toBe(200);
      expect((await embed(emu, request)).status).toBe(503);
    });
  });

  it('restarts the script on reset()', async () => {
    await withEmulator({ faults: { script: ['500'] } }, async (emu) => {
      expect((await embed(emu, request)).status).toBe(500);
      expect((await embed(emu, request)).status).toBe(200);
      emu.reset();
      expect(emu.stats.requests).toBe(0);
      expect((await embed(emu, request)).status).toBe(500);
      emu.reset({ faults: { script: ['502'] } });
      expect((await embed(emu, request)).status).toBe(502);
    });
  });
});

describe('probabilistic faults', () => {
  async function statuses(options: EmulatorOptions, n: number): Promise<number[]> {
    const emu = await startEmulator(options);
    try {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await embed(emu, request)).status);
      return out;
    } finally {
      await emu.close();
    }
  }

  it('are reproducible from the seed, and follow the script first', async () => {
    const options = (seed: number): EmulatorOptions => ({
      faults: { seed, script: ['529'], probabilities: { '500': 0.3, '503': 0.2 }, retryAfterSeconds: 0 },
    });
    const first = await statuses(options(7), 40);
    expect(first[0]).toBe(529);
    expect(await statuses(options(7), 40)).toEqual(first);
    expect(await statuses(options(8), 40)).not.toEqual(first);
    const faulted = first.slice(1).filter((s) => s !== 200).length;
    expect(faulted).toBeGreaterThan(5);
    expect(faulted).toBeLessThan(35);
    expect(new Set(first)).toEqual(new Set([200, 500, 503, 529]));
  });
});

describe('latency', () => {
  it('is added before every answer on the fault paths, fixed or within a range', async () => {
    await withEmulator({ faults: { latencyMs: 40 } }, async (emu) => {
      const started = performance.now();
      expect((await embed(emu, request)).status).toBe(200);
      expect(performance.now() - started).toBeGreaterThanOrEqual(35);
      expect(emu.requests[0]!.ms).toBeGreaterThanOrEqual(39);
    });
    await withEmulator({ faults: { latencyMs: { min: 20, max: 30 } } }, async (emu) => {
      await embed(emu, request);
      await embed(emu, { model: 'emu/embed-small' }); // a 400 waits too
      for (const record of emu.requests) expect(record.ms).toBeGreaterThanOrEqual(19);
    });
  });
});

describe('the server', () => {
  it('answers concurrent requests on kept-alive connections', async () => {
    await withEmulator({ faults: { latencyMs: 30 } }, async (emu) => {
      const replies = await Promise.all(
        Array.from({ length: 10 }, (_, i) => embed(emu, { ...request, input: `t${i}` })),
      );
      expect(replies.every((r) => r.status === 200)).toBe(true);
      expect(emu.stats.maxInFlight).toBeGreaterThan(1);
      expect(emu.stats.inFlight).toBe(0);
    });
  });

  it('close() ends requests still waiting', async () => {
    const emu = await startEmulator({ faults: { script: ['slow'], slowMs: 10_000 } });
    const pending = embed(emu, request).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = performance.now();
    await emu.close();
    expect(await pending).toBeInstanceOf(Error);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});
