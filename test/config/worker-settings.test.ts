/**
 * `--concurrency` means requests in flight in this process, in run, enqueue and worker alike; a
 * worker derives how many queue jobs it takes at once from it. The worker's other settings and the
 * queue address follow the table's rule: flag, then environment, then default.
 */
import { describe, expect, it } from 'vitest';
import { queueAddress } from '../../src/cli/queue-options.js';
import { DEFAULTS } from '../../src/config/defaults.js';
import { resolveRunSettings, resolveWorkerSettings } from '../../src/config/settings.js';
import { ConfigError, UsageError } from '../../src/errors.js';

const ENV = { baseUrl: 'http://env/v1', redisUrl: 'redis://env:6379' };

describe('--concurrency', () => {
  it('is the same default in run and worker', () => {
    const run = resolveRunSettings({ input: 'x', model: 'm' }, undefined, ENV);
    const worker = resolveWorkerSettings({}, ENV);
    expect(run.concurrency).toBe(DEFAULTS.concurrency);
    expect(worker.concurrency).toBe(DEFAULTS.concurrency);
  });

  it('sets the requests in flight of a worker, and as many queue jobs at once', () => {
    expect(resolveWorkerSettings({ concurrency: 3 }, ENV)).toMatchObject({
      concurrency: 3,
      batchConcurrency: 3,
    });
  });

  it('is refused out of bounds, naming the flag, as in run', () => {
    const message = '--concurrency: must be an integer from 1 to 1024 (got 0)';
    expect(() => resolveWorkerSettings({ concurrency: 0 }, ENV)).toThrow(message);
    expect(() => resolveRunSettings({ input: 'x', model: 'm', concurrency: 0 }, undefined, ENV)).toThrow(
      message,
    );
    expect(() => resolveWorkerSettings({ concurrency: 1025 }, ENV)).toThrow(ConfigError);
  });
});

describe('worker settings', () => {
  it('take the defaults, in ms', () => {
    expect(resolveWorkerSettings({}, ENV)).toEqual({
      baseUrl: 'http://env/v1',
      concurrency: DEFAULTS.concurrency,
      batchConcurrency: DEFAULTS.concurrency,
      retry: { maxRetryAfterMs: DEFAULTS.retry.maxRetryAfterMs },
      lockDurationMs: DEFAULTS.distributed.lockDurationMs,
      allowInsecureHttp: false,
      rateLimits: {},
      memoryTargetMb: DEFAULTS.memoryTarget.mb,
    });
  });

  it('take flags in seconds', () => {
    const settings = resolveWorkerSettings(
      {
        baseUrl: 'http://flag/v1',
        maxRetryAfter: 7,
        lockDuration: 4,
        metricsPort: 0,
        allowInsecureHttp: true,
      },
      ENV,
    );
    expect(settings).toMatchObject({
      baseUrl: 'http://flag/v1',
      retry: { maxRetryAfterMs: 7000 },
      lockDurationMs: 4000,
      metricsPort: 0,
      allowInsecureHttp: true,
    });
  });

  it('need a base URL, and say what to set', () => {
    expect(() => resolveWorkerSettings({}, {})).toThrow(
      new UsageError('no gateway: set EMBEDPIPE_BASE_URL (ends in /v1) or pass --base-url URL'),
    );
  });
});

describe('the queue address', () => {
  it('is the flags, then REDIS_URL, then the defaults', () => {
    expect(queueAddress({}, ENV)).toEqual({
      redisUrl: 'redis://env:6379',
      queue: DEFAULTS.distributed.queue,
      prefix: DEFAULTS.distributed.prefix,
    });
    expect(queueAddress({ redis: 'redis://flag:1', queue: 'q', prefix: 'p' }, ENV)).toEqual({
      redisUrl: 'redis://flag:1',
      queue: 'q',
      prefix: 'p',
    });
  });

  it('needs Redis, and refuses a queue name with ":"', () => {
    expect(() => queueAddress({}, {})).toThrow('no Redis: pass --redis redis://HOST:6379 or set REDIS_URL');
    expect(() => queueAddress({ queue: 'a:b' }, ENV)).toThrow(
      '--queue a:b: a queue name may not contain ":"',
    );
  });
});
