import { describe, expect, it } from 'vitest';
import { countPieces, type EmulatorOptions, validateEmulatorOptions } from '../../src/emulator/index.js';
import { formatDuration } from '../../src/emulator/rate-headers.js';
import { ConfigError } from '../../src/errors.js';
import { call, embed, expectEnvelope, type Reply, sleep, withEmulator } from './helpers.js';

const small = (input: string | string[]) => ({ model: 'emu/embed-small', input });

/** Reads back the reset durations the emulator writes: `59ms`, `1.5s`, `1m30.5s`. */
function parseDuration(text: string): number {
  const match = /^(?:(\d+)ms|(?:(\d+)m)?(\d+(?:\.\d{1,3})?)s)$/.exec(text);
  if (!match) throw new Error(`not a reset duration: ${text}`);
  if (match[1] !== undefined) return Number(match[1]);
  return Number(match[2] ?? 0) * 60_000 + Number(match[3]) * 1000;
}

function rateHeaders(reply: Reply): Record<string, string> {
  return Object.fromEntries([...reply.headers].filter(([name]) => name.startsWith('x-ratelimit-')));
}

/** The limit, remaining and reset (ms) of one window, as the headers of `reply` give them. */
function window(reply: Reply, kind: 'requests' | 'tokens') {
  const header = (name: string) => {
    const value = reply.headers.get(`x-ratelimit-${name}-${kind}`);
    if (value === null) throw new Error(`no x-ratelimit-${name}-${kind} on a ${reply.status}`);
    return value;
  };
  return {
    limit: Number(header('limit')),
    remaining: Number(header('remaining')),
    resetMs: parseDuration(header('reset')),
  };
}

const withHeaders = (limits: NonNullable<EmulatorOptions['keys']>[number]['limits']): EmulatorOptions => ({
  keys: [{ key: 'k', name: 'limited', ...(limits ? { limits } : {}) }],
  rateLimitHeaders: true,
});

describe('formatDuration', () => {
  it.each([
    [0, '0ms'],
    [59, '59ms'],
    [59.2, '60ms'],
    [999, '999ms'],
    [1000, '1s'],
    [1500, '1.5s'],
    [59_999, '59.999s'],
    [60_000, '1m0s'],
    [61_001, '1m1.001s'],
    [90_500, '1m30.5s'],
    [360_000, '6m0s'],
  ])('writes %s ms as %s, which parses back', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
    expect(parseDuration(text)).toBe(Math.ceil(ms));
  });
});

describe('rate-limit headers', () => {
  it('are absent by default, on 200s and 429s alike', async () => {
    const options = { keys: [{ key: 'k', limits: { requestsPerMinute: 1, tokensPerMinute: 1000 } }] };
    await withEmulator(options, async (emu) => {
      const ok = await embed(emu, small('a'), 'k');
      expect(ok.status).toBe(200);
      const refused = await embed(emu, small('b'), 'k');
      expectEnvelope(refused, 429);
      for (const reply of [ok, refused]) {
        expect(rateHeaders(reply)).toEqual({});
        expect(reply.headers.get('retry-after-ms')).toBeNull();
      }
      expect(refused.headers.get('retry-after')).not.toBeNull();
    });
  });

  it('count the requests window down and say when it empties', async () => {
    await withEmulator(withHeaders({ requestsPerMinute: 3 }), async (emu) => {
      for (const remaining of [2, 1, 0]) {
        const reply = await embed(emu, small(`r${remaining}`), 'k');
        expect(reply.status).toBe(200);
        const requests = window(reply, 'requests');
        expect(requests).toMatchObject({ limit: 3, remaining });
        // The newest request leaves the window a minute after it entered, a moment ago.
        expect(requests.resetMs).toBeGreaterThan(59_000);
        expect(requests.resetMs).toBeLessThanOrEqual(60_000);
      }
      // A key without a tokens window gets no tokens headers.
      const refused = await embed(emu, small('over'), 'k');
      expectEnvelope(refused, 429);
      expect(Object.keys(rateHeaders(refused)).sort()).toEqual([
        'x-ratelimit-limit-requests',
        'x-ratelimit-remaining-requests',
        'x-ratelimit-reset-requests',
      ]);
      expect(window(refused, 'requests').remaining).toBe(0);
    });
  });

  it('count prompt tokens in the tokens window', async () => {
    const text = 'one two three four five six seven eight nine ten';
    const n = countPieces(text);
    await withEmulator(withHeaders({ tokensPerMinute: n * 3 }), async (emu) => {
      const first = await embed(emu, small(text), 'k');
      expect(window(first, 'tokens')).toMatchObject({ limit: n * 3, remaining: n * 2 });
      expect(window(first, 'tokens').resetMs).toBeGreaterThan(59_000);
      const second = await embed(emu, small([text, text]), 'k');
      expect(window(second, 'tokens')).toMatchObject({ remaining: 0 });
      expect(second.headers.get('x-ratelimit-limit-requests')).toBeNull();
      const refused = await embed(emu, small(text), 'k');
      expect(expectEnvelope(refused, 429)).toMatch(/tokens per minute/);
      expect(window(refused, 'tokens').remaining).toBe(0);
      expect(Number(refused.headers.get('retry-after-ms'))).toBeGreaterThan(59_000);
    });
  });

  it('ride on every inference answer of a limited key, errors included, and on nothing else', async () => {
    const options: EmulatorOptions = {
      keys: [
        { key: 'k', limits: { requestsPerMinute: 5, tokensPerMinute: 1000, maxInFlight: 1 } },
        { key: 'free' },
      ],
      rateLimitHeaders: true,
      faults: { script: ['ok', '503'], latencyMs: 50 },
    };
    await withEmulator(options, async (emu) => {
      const ok = await embed(emu, small('a'), 'k');
      const faulted = await embed(emu, small('b'), 'k');
      expectEnvelope(faulted, 503);
      // Refused before any window is taken: the windows still show the two requests admitted.
      const unknownModel = await embed(emu, { model: 'emu/nope', input: 'c' }, 'k');
      expectEnvelope(unknownModel, 404);
      const badBody = await call(emu, '/embeddings', { body: '{', key: 'k' });
      expectEnvelope(badBody, 400);
      const pair = await Promise.all([embed(emu, small('d'), 'k'), embed(emu, small('e'), 'k')]);
      expect(pair.map((r) => r.status).sort()).toEqual([200, 429]);
      const inFlight = pair.find((r) => r.status === 429)!;
      expect(expectEnvelope(inFlight, 429)).toMatch(/in flight/);
      // Only the windows' own 429s carry the exact wait.
      expect(inFlight.headers.get('retry-after-ms')).toBeNull();

      expect(window(ok, 'requests').remaining).toBe(4);
      for (const reply of [faulted, unknownModel, badBody]) {
        expect(window(reply, 'requests')).toMatchObject({ limit: 5, remaining: 3 });
        expect(window(reply, 'tokens').limit).toBe(1000);
      }
      expect(window(inFlight, 'requests').remaining).toBeLessThanOrEqual(3);

      // A key without rate windows, and the non-inference endpoints, get none.
      expect(rateHeaders(await embed(emu, small('f'), 'free'))).toEqual({});
      expect(rateHeaders(await call(emu, '/embeddings/models', { key: 'k' }))).toEqual({});
    });
  });

  it('give a window 429 retry-after-ms and retry-after that agree, after which the request fits', async () => {
    await withEmulator(withHeaders({ requestsPerMinute: 1, windowMs: 1500 }), async (emu) => {
      const sentAt = performance.now();
      expect((await embed(emu, small('a'), 'k')).status).toBe(200);
      const refused = await embed(emu, small('b'), 'k');
      const elapsed = performance.now() - sentAt;
      expectEnvelope(refused, 429);
      const ms = Number(refused.headers.get('retry-after-ms'));
      expect(Number.isInteger(ms)).toBe(true);
      // The first request leaves the window 1500 ms after it entered, which was within `elapsed`.
      expect(ms).toBeGreaterThanOrEqual(1500 - elapsed - 1);
      expect(ms).toBeLessThanOrEqual(1500);
      expect(refused.headers.get('retry-after')).toBe(String(Math.ceil(ms / 1000)));
      // With one request per window, the window empties just when the next request fits.
      expect(Math.abs(window(refused, 'requests').resetMs - ms)).toBeLessThanOrEqual(20);

      await sleep(ms);
      const retried = await embed(emu, small('b'), 'k');
      expect(retried.status).toBe(200);
      // Going by retry-after-ms, earlier than the whole seconds of retry-after, honours it too.
      expect(emu.stats.retryAfterViolations).toEqual({});
    });
  });

  it('give no wait to a request too large for the tokens window', async () => {
    await withEmulator(withHeaders({ tokensPerMinute: 3 }), async (emu) => {
      const refused = await embed(emu, small('this text has more than three tokens'), 'k');
      expect(expectEnvelope(refused, 429)).toMatch(/Request too large/);
      expect(refused.headers.get('retry-after')).toBeNull();
      expect(refused.headers.get('retry-after-ms')).toBeNull();
      expect(window(refused, 'tokens')).toEqual({ limit: 3, remaining: 3, resetMs: 0 });
    });
  });

  it('start afresh after reset()', async () => {
    await withEmulator(withHeaders({ requestsPerMinute: 2 }), async (emu) => {
      await embed(emu, small('a'), 'k');
      emu.reset();
      expect(window(await embed(emu, small('b'), 'k'), 'requests').remaining).toBe(1);
    });
  });
});

describe('windowMs', () => {
  it('reports a short window as its per-minute rate', async () => {
    await withEmulator(withHeaders({ requestsPerMinute: 12, windowMs: 6000 }), async (emu) => {
      const reply = await embed(emu, small('a'), 'k');
      expect(window(reply, 'requests')).toMatchObject({ limit: 120, remaining: 11 });
      expect(window(reply, 'requests').resetMs).toBeLessThanOrEqual(6000);
      expect(window(reply, 'requests').resetMs).toBeGreaterThan(5000);
    });
  });

  it('shortens the window: a refused request fits again once it has passed', async () => {
    const options = { keys: [{ key: 'k', limits: { requestsPerMinute: 2, windowMs: 300 } }] };
    await withEmulator(options, async (emu) => {
      expect((await embed(emu, small('a'), 'k')).status).toBe(200);
      expect((await embed(emu, small('b'), 'k')).status).toBe(200);
      const refused = await embed(emu, small('c'), 'k');
      expect(expectEnvelope(refused, 429)).toMatch(/2 requests per 300 ms/);
      expect(refused.headers.get('retry-after')).toBe('1');
      await sleep(1000);
      expect((await embed(emu, small('c'), 'k')).status).toBe(200);
      expect(emu.stats.retryAfterViolations).toEqual({});
    });
  });

  it.each([
    [{ keys: [{ key: 'k', limits: { windowMs: 0 } }] }, 'keys.0.limits.windowMs'],
    [{ keys: [{ key: 'k', limits: { windowMs: 1.5 } }] }, 'keys.0.limits.windowMs'],
    [{ rateLimitHeaders: 'yes' }, 'rateLimitHeaders'],
  ])('is validated with rateLimitHeaders: %j names %s', (options, field) => {
    let error: unknown;
    try {
      validateEmulatorOptions(options);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe(field);
  });
});
