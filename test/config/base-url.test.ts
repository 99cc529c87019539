/** The gateway base URL has no default: the first one set wins, none set is a usage error saying what to set. */
import { describe, expect, it } from 'vitest';
import { resolveBaseUrl } from '../../src/config/base-url.js';
import { ExitCode, UsageError } from '../../src/errors.js';

const caught = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('did not throw');
};

const FLAG = 'http://flag/v1';
const JOB = 'http://job/v1';
const ENV = 'http://env/v1';

describe('resolveBaseUrl', () => {
  it('is the first one set: the flag, then the job file, then EMBEDPIPE_BASE_URL', () => {
    expect(resolveBaseUrl({ flag: FLAG, job: JOB, env: ENV })).toBe(FLAG);
    expect(resolveBaseUrl({ job: JOB, env: ENV })).toBe(JOB);
    expect(resolveBaseUrl({ flag: undefined, job: undefined, env: ENV })).toBe(ENV);
    expect(resolveBaseUrl({ flag: FLAG, env: ENV })).toBe(FLAG);
  });

  it('none set: exit 2 naming EMBEDPIPE_BASE_URL and --base-url, never a guessed local URL', () => {
    for (const sources of [{}, { flag: undefined }, { flag: undefined, job: undefined, env: undefined }]) {
      const error = caught(() => resolveBaseUrl(sources));
      expect(error).toBeInstanceOf(UsageError);
      expect((error as UsageError).exitCode).toBe(ExitCode.usage);
      expect((error as Error).message).toBe(
        'no gateway: set EMBEDPIPE_BASE_URL (ends in /v1) or pass --base-url URL',
      );
    }
  });
});

describe('resolveBaseUrl for run (the emulator instead)', () => {
  it('is the first one set, with or without the emulator', () => {
    expect(resolveBaseUrl({ job: JOB, env: ENV }, { emulator: false })).toBe(JOB);
    expect(resolveBaseUrl({ flag: FLAG }, { emulator: true })).toBe(FLAG);
  });

  it('needs none with --emulator (run calls the emulator it starts)', () => {
    expect(resolveBaseUrl({}, { emulator: true })).toBe('');
  });

  it('none set and no emulator: exit 2 naming every way to set one, --emulator too', () => {
    const error = caught(() => resolveBaseUrl({}, { emulator: false }));
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toBe(
      'no gateway: set EMBEDPIPE_BASE_URL (ends in /v1) or pass --base-url URL (or gateway.baseUrl in the job file), ' +
        'or --emulator to use the local gateway emulator',
    );
  });
});

describe('resolveBaseUrl for finalize (only recorded)', () => {
  it('is the flag, then EMBEDPIPE_BASE_URL, and "unknown" when neither is set', () => {
    expect(resolveBaseUrl({ flag: FLAG, env: ENV }, { optional: true })).toBe(FLAG);
    expect(resolveBaseUrl({ env: ENV }, { optional: true })).toBe(ENV);
    expect(resolveBaseUrl({}, { optional: true })).toBe('unknown');
  });
});
