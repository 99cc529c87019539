import { describe, expect, it } from 'vitest';
import { countPieces, IN_FLIGHT_GRACE_MS, RETRY_AFTER_TOLERANCE_MS } from '../../src/emulator/index.js';
import { embed, expectEnvelope, sleep, withEmulator } from './helpers.js';

const small = (input: string | string[]) => ({ model: 'emu/embed-small', input });

describe('credits', () => {
  it('charges prompt tokens × price per key and answers 402, charging nothing, when the rest cannot pay', async () => {
    const text = 'twelve tokens of text, more or less, for the credit test';
    const cost = countPieces(text) * 0.00000002;
    // Enough for two requests, not three.
    await withEmulator({ keys: [{ key: 'k', name: 'payer', credits: cost * 2.5 }] }, async (emu) => {
      expect((await embed(emu, small(text), 'k')).status).toBe(200);
      expect((await embed(emu, small(text), 'k')).status).toBe(200);
      const message = expectEnvelope(await embed(emu, small(text), 'k'), 402);
      expect(message).toMatch(/Insufficient credits/);
      expect(emu.stats.spend['payer']).toBeCloseTo(cost * 2, 15);
      expect(emu.stats.tokens).toBe(countPieces(text) * 2);
    });
  });

  it('leaves the default key unlimited', async () => {
    await withEmulator({}, async (emu) => {
      expect((await embed(emu, small('x'))).status).toBe(200);
      expect(emu.stats.spend['default']).toBeGreaterThan(0);
    });
  });
});

describe('rate limits', () => {
  it('answers 429 with Retry-After (ceil seconds) when the requests window is full, and counts violations', async () => {
    await withEmulator(
      { keys: [{ key: 'k', name: 'limited', limits: { requestsPerMinute: 2 } }] },
      async (emu) => {
        expect((await embed(emu, small('a'), 'k')).status).toBe(200);
        expect((await embed(emu, small('b'), 'k')).status).toBe(200);
        const refused = await embed(emu, small('c'), 'k');
        expect(expectEnvelope(refused, 429)).toMatch(/2 requests per minute/);
        // The first request leaves the window 60 s after it entered.
        const seconds = Number(refused.headers.get('retry-after'));
        expect(seconds).toBeGreaterThanOrEqual(59);
        expect(seconds).toBeLessThanOrEqual(60);
        expect(emu.stats.retryAfterViolations).toEqual({});
        // Within the grace a request may have left before the client read the 429: not counted.
        expectEnvelope(await embed(emu, small('d'), 'k'), 429);
        expect(emu.stats.retryAfterViolations).toEqual({});
        // Coming back later, still well inside the Retry-After, ignores it.
        await new Promise((resolve) => setTimeout(resolve, IN_FLIGHT_GRACE_MS + 20));
        expectEnvelope(await embed(emu, small('e'), 'k'), 429);
        expect(emu.stats.retryAfterViolations).toEqual({ limited: 1 });
        // Timed, for a failing test to say how early a request came.
        expect(emu.stats.retryAfterViolationTimes).toHaveLength(1);
        const [late] = emu.stats.retryAfterViolationTimes;
        expect(late).toMatchObject({ key: 'limited' });
        expect(late!.afterToldMs).toBeGreaterThan(IN_FLIGHT_GRACE_MS);
        expect(late!.afterToldMs).toBeLessThan(10_000);
        expect(late!.beforeEndMs).toBeGreaterThan(40_000);
      },
    );
  });

  it('limits tokens per minute over a sliding window', async () => {
    const text = 'one two three four five six seven eight nine ten';
    const n = countPieces(text);
    await withEmulator({ keys: [{ key: 'k', limits: { tokensPerMinute: n * 2 } }] }, async (emu) => {
      expect((await embed(emu, small([text, text]), 'k')).status).toBe(200);
      const refused = await embed(emu, small(text), 'k');
      expect(expectEnvelope(refused, 429)).toMatch(/tokens per minute/);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    });
  });

  it('answers 429 without Retry-After to a request that can never fit the token window', async () => {
    await withEmulator({ keys: [{ key: 'k', limits: { tokensPerMinute: 3 } }] }, async (emu) => {
      const refused = await embed(emu, small('this text has more than three tokens'), 'k');
      expect(expectEnvelope(refused, 429)).toMatch(/Request too large/);
      expect(refused.headers.get('retry-after')).toBeNull();
    });
  });

  it('limits requests in flight per key and reports the most seen', async () => {
    const options = { keys: [{ key: 'k', limits: { maxInFlight: 2 } }], faults: { latencyMs: 100 } };
    await withEmulator(options, async (emu) => {
      const replies = await Promise.all([1, 2, 3].map((i) => embed(emu, small(`t${i}`), 'k')));
      expect(replies.map((r) => r.status).sort()).toEqual([200, 200, 429]);
      const refused = replies.find((r) => r.status === 429)!;
      expect(expectEnvelope(refused, 429)).toMatch(/in flight/);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(emu.stats.maxInFlight).toBe(3);
    });
  });

  it("writes Retry-After as a retry-after-ms header with retryAfterFormat 'ms'", async () => {
    const options = {
      keys: [{ key: 'k', limits: { requestsPerMinute: 1 } }],
      retryAfterFormat: 'ms' as const,
    };
    await withEmulator(options, async (emu) => {
      await embed(emu, small('a'), 'k');
      const refused = await embed(emu, small('b'), 'k');
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBeNull();
      const ms = Number(refused.headers.get('retry-after-ms'));
      expect(ms).toBeGreaterThan(59_000);
      expect(ms).toBeLessThanOrEqual(60_000);
    });
  });

  it("writes Retry-After as an HTTP-date with retryAfterFormat 'http-date'", async () => {
    const options = {
      keys: [{ key: 'k', limits: { requestsPerMinute: 1 } }],
      retryAfterFormat: 'http-date' as const,
    };
    await withEmulator(options, async (emu) => {
      await embed(emu, small('a'), 'k');
      const refused = await embed(emu, small('b'), 'k');
      const header = refused.headers.get('retry-after')!;
      expect(header).toMatch(/GMT$/);
      const wait = Date.parse(header) - Date.now();
      expect(wait).toBeGreaterThan(58_000);
      expect(wait).toBeLessThanOrEqual(61_000);
    });
  });

  it('does not count a request that waited out its Retry-After', async () => {
    const options = {
      keys: [{ key: 'k', name: 'patient' }],
      retryAfterFormat: 'ms' as const,
      faults: { script: ['429' as const], retryAfterSeconds: 0.04 },
    };
    await withEmulator(options, async (emu) => {
      const refused = await embed(emu, small('a'), 'k');
      expect(refused.headers.get('retry-after-ms')).toBe('40');
      await sleep(40 + RETRY_AFTER_TOLERANCE_MS);
      expect((await embed(emu, small('a'), 'k')).status).toBe(200);
      expect(emu.stats.retryAfterViolations).toEqual({});
    });
  });

  it('keeps keys apart: one key being limited does not affect another', async () => {
    const options = { keys: [{ key: 'k1', limits: { requestsPerMinute: 1 } }, { key: 'k2' }] };
    await withEmulator(options, async (emu) => {
      await embed(emu, small('a'), 'k1');
      expect((await embed(emu, small('b'), 'k1')).status).toBe(429);
      expect((await embed(emu, small('c'), 'k2')).status).toBe(200);
      expect(emu.stats.retryAfterViolations).toEqual({});
    });
  });
});
