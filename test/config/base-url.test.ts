/** The gateway base URL has no default: the first one set wins, none set is a usage error saying what to set. */
import { describe, expect, it } from 'vitest';
import { gatewayBaseUrl, runGatewayBaseUrl } from '../../src/config/base-url.js';
import { ExitCode, UsageError } from '../../src/errors.js';

const caught = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('did not throw');
};

describe('gatewayBaseUrl', () => {
  it('is the first candidate set, in the order given (flag, job file, environment)', () => {
    expect(gatewayBaseUrl('http://flag/v1', 'http://job/v1', 'http://env/v1')).toBe('http://flag/v1');
    expect(gatewayBaseUrl(undefined, 'http://job/v1', 'http://env/v1')).toBe('http://job/v1');
    expect(gatewayBaseUrl(undefined, undefined, 'http://env/v1')).toBe('http://env/v1');
  });

  it('none set: exit 2 naming EMBEDPIPE_BASE_URL and --base-url, never a guessed local URL', () => {
    for (const candidates of [[], [undefined], [undefined, undefined, undefined]]) {
      const error = caught(() => gatewayBaseUrl(...candidates));
      expect(error).toBeInstanceOf(UsageError);
      expect((error as UsageError).exitCode).toBe(ExitCode.usage);
      expect((error as Error).message).toBe(
        'no gateway: set EMBEDPIPE_BASE_URL (ends in /v1) or pass --base-url URL',
      );
    }
  });
});

describe('runGatewayBaseUrl', () => {
  it('is the first candidate set, with or without the emulator', () => {
    expect(runGatewayBaseUrl(false, undefined, 'http://job/v1', 'http://env/v1')).toBe('http://job/v1');
    expect(runGatewayBaseUrl(true, 'http://flag/v1')).toBe('http://flag/v1');
  });

  it('needs none with --emulator (run calls the emulator it starts)', () => {
    expect(runGatewayBaseUrl(true, undefined, undefined, undefined)).toBe('');
  });

  it('none set and no emulator: exit 2 naming every way to set one, --emulator too', () => {
    const error = caught(() => runGatewayBaseUrl(false, undefined, undefined, undefined));
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toBe(
      'no gateway: set EMBEDPIPE_BASE_URL (ends in /v1) or pass --base-url URL (or gateway.baseUrl in the job file), ' +
        'or --emulator to use the local gateway emulator',
    );
  });
});
