/**
 * resolveRunSettings through the options table: the messages for bad values (what library callers
 * meet; commander checks the command line with the same bounds), units, and the rules joining
 * options.
 */
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/config/defaults.js';
import { parseJob } from '../../src/config/job.js';
import { type RunFlags, resolveRunSettings } from '../../src/config/settings.js';

const GATEWAY = { baseUrl: 'http://127.0.0.1:4000/v1' };
const run = (flags: RunFlags, env: { baseUrl?: string } = GATEWAY) =>
  resolveRunSettings({ input: 'docs', model: 'm/x', ...flags }, undefined, env);

describe('bad values', () => {
  it.each<[RunFlags, string]>([
    [{ concurrency: 1025 }, '--concurrency: must be an integer from 1 to 1024 (got 1025)'],
    [{ maxInputs: 0 }, '--max-inputs: must be an integer from 1 to 2048 (got 0)'],
    [{ maxTokens: 1.5 }, '--max-tokens: must be an integer from 1 to 9007199254740991 (got 1.5)'],
    [{ overlap: -1 }, '--overlap: must be an integer from 0 to 9007199254740991 (got -1)'],
    [{ maxRetryAfter: 86_401 }, '--max-retry-after: must be an integer from 0 to 86400 (got 86401)'],
    [{ commitInterval: -1 }, '--commit-interval: must be an integer from 0 to 600000 (got -1)'],
    [{ memoryTarget: -1 }, '--memory-target: must be an integer from 0 to 1000000 (got -1)'],
    [{ keepVersions: 1001 }, '--keep-versions: must be an integer from 0 to 1000 (got 1001)'],
    [{ sttConcurrency: 257 }, '--stt-concurrency: must be an integer from 1 to 256 (got 257)'],
    [{ temperature: 3 }, '--temperature: must be a number from 0 to 2 (got 3)'],
    [{ format: 'xml' }, '--format: must be one of csv, jsonl, text, images, audio (got "xml")'],
    [{ outputFormat: 'csv' }, '--output-format: must be one of parquet, arrow (got "csv")'],
    [{ encodingFormat: 'hex' }, '--encoding-format: must be one of base64, float (got "hex")'],
    [{ dataCollection: 'maybe' }, '--data-collection: must be one of allow, deny (got "maybe")'],
    [{ language: 'eng' }, '--language: must be a two-letter ISO-639-1 code such as "en" (got "eng")'],
    [{ sttProviderOptions: '[1]' }, '--stt-provider-options: must be a JSON object of options per provider'],
    [{ sttProviderOptions: '{' }, '--stt-provider-options: is not JSON: '],
    [{ maxTokens: 500, maxTokensPerRequest: 400 }, '--max-tokens: is above the per-request budget 400'],
  ])('%o: %s', (flags, message) => {
    expect(() => run(flags)).toThrow(message);
  });

  it('a bad flag is reported before a missing gateway', () => {
    expect(() => run({ encodingFormat: 'hex' }, {})).toThrow(/^--encoding-format: /);
  });
});

describe('values', () => {
  it('--max-retry-after is seconds; the setting is ms', () => {
    expect(run({}).retry.maxRetryAfterMs).toBe(DEFAULTS.retry.maxRetryAfterMs);
    expect(run({ maxRetryAfter: 0 }).retry.maxRetryAfterMs).toBe(0);
    expect(run({ maxRetryAfter: 60 }).retry.maxRetryAfterMs).toBe(60_000);
    expect(run({ rpm: 120, tpm: 100_000 }).rateLimits).toEqual({ requests: 120, tokens: 100_000 });
    expect(run({ tpm: 100_000 }).rateLimits).toEqual({ tokens: 100_000 });
  });

  it('--language is lower-cased; --provider-order is split and trimmed, empty ones dropped', () => {
    expect(run({ language: 'EN' }).transcription.language).toBe('en');
    expect(run({ providerOrder: ' a, b ,,' }).provider.order).toEqual(['a', 'b']);
    expect(run({ providerOrder: ' , ' }).provider).toEqual({});
  });

  it('paths are relative to the working folder; an empty --input or --out is none', () => {
    const job = parseJob({ input: { path: 'docs' }, model: 'm', output: { dir: 'o' } }, '/jobs/j.json');
    expect(resolveRunSettings({ out: 'x' }, job, GATEWAY).outDir).toBe(resolve('x'));
    expect(resolveRunSettings({ input: '', out: '' }, job, GATEWAY)).toMatchObject({
      input: '/jobs/docs',
      outDir: '/jobs/o',
    });
    expect(run({}).outDir).toBe(resolve(DEFAULTS.outDir));
  });

  it('job-file-only settings come from the job file, else their defaults', () => {
    const job = parseJob(
      { input: { path: 'docs' }, model: 'm', gateway: { timeoutMs: 5 }, retry: { baseDelayMs: 7 } },
      '/jobs/j.json',
    );
    const settings = resolveRunSettings({}, job, GATEWAY);
    expect(settings.timeoutMs).toBe(5);
    expect(settings.retry).toMatchObject({ baseDelayMs: 7, maxDelayMs: DEFAULTS.retry.maxDelayMs });
    expect(run({}).timeoutMs).toBe(DEFAULTS.requestTimeoutMs);
  });

  it('--no-allow-fallbacks beats a job that allows them; unset, the gateway decides', () => {
    const job = parseJob(
      { input: { path: 'docs' }, model: 'm', provider: { allowFallbacks: true } },
      '/jobs/j.json',
    );
    expect(resolveRunSettings({ allowFallbacks: false }, job, GATEWAY).provider).toEqual({
      allowFallbacks: false,
    });
    expect(run({}).provider).toEqual({});
  });

  it('resolves the same settings as before the table for a run with no options', () => {
    expect(run({})).toEqual({
      input: resolve('docs'),
      idField: 'id',
      textField: 'text',
      encoding: 'utf-8',
      maxImageBytes: DEFAULTS.images.maxBytes,
      maxImageBytesPerRequest: DEFAULTS.images.maxBytesPerRequest,
      maxAudioBytes: DEFAULTS.audio.maxBytes,
      transcription: { concurrency: DEFAULTS.audio.concurrency },
      model: 'm/x',
      outDir: resolve('out'),
      outputFormat: 'parquet',
      vectors: { types: [] },
      baseUrl: GATEWAY.baseUrl,
      emulator: false,
      timeoutMs: DEFAULTS.requestTimeoutMs,
      concurrency: DEFAULTS.concurrency,
      maxInputs: DEFAULTS.maxInputsPerRequest,
      maxTokensPerRequest: DEFAULTS.maxTokensPerRequest,
      overlap: 0,
      encodingFormat: 'base64',
      provider: {},
      retry: {
        maxAttempts: DEFAULTS.retry.maxAttempts,
        maxRetryAfterMs: DEFAULTS.retry.maxRetryAfterMs,
        baseDelayMs: DEFAULTS.retry.baseDelayMs,
        maxDelayMs: DEFAULTS.retry.maxDelayMs,
      },
      rateLimits: {},
      dryRun: false,
      commitIntervalMs: DEFAULTS.commit.maxDelayMs,
      memoryTargetMb: DEFAULTS.memoryTarget.mb,
      allowInsecureHttp: false,
      followSymlinks: false,
      force: false,
      keepVersions: DEFAULTS.keepVersions,
    });
  });
});
