import { describe, expect, it } from 'vitest';
import { parseJob } from '../../src/config/job.js';
import { checkGatewayTransport, isLoopbackHost, resolveRunSettings } from '../../src/config/settings.js';
import { UsageError } from '../../src/errors.js';

const flags = { input: 'docs.csv', model: 'openai/text-embedding-3-small' };
const check = (baseUrl: string, allowInsecureHttp = false) =>
  checkGatewayTransport({ baseUrl, emulator: false, allowInsecureHttp });

describe('plain HTTP to a remote gateway', () => {
  it('is refused with a message naming the flag', () => {
    expect(() => check('http://gateway.example/api/v1')).toThrow(UsageError);
    expect(() => check('http://gateway.example/api/v1')).toThrow(/clear text.*--allow-insecure-http/);
    expect(() => check('http://10.0.0.5:8080/v1')).toThrow(UsageError);
    expect(() => check('http://[2001:db8::1]/v1')).toThrow(UsageError);
  });

  it('is allowed with --allow-insecure-http or the job field', () => {
    const settings = resolveRunSettings(
      { ...flags, baseUrl: 'http://gateway.example/v1', allowInsecureHttp: true },
      undefined,
      {},
    );
    expect(() => checkGatewayTransport(settings)).not.toThrow();
    const job = parseJob(
      {
        input: { path: 'a.csv' },
        model: 'm/x',
        gateway: { baseUrl: 'http://gw.example/v1', allowInsecureHttp: true },
      },
      '/tmp/job.json',
    );
    expect(() => checkGatewayTransport(resolveRunSettings({}, job, {}))).not.toThrow();
    expect(() =>
      checkGatewayTransport(resolveRunSettings(flags, undefined, { baseUrl: 'http://gw/v1' })),
    ).toThrow(UsageError);
  });

  it('stays allowed to loopback addresses, and https anywhere', () => {
    for (const baseUrl of [
      'http://127.0.0.1:4000/v1',
      'http://127.8.9.10/v1',
      'http://localhost:4000/v1',
      'http://[::1]:4000/v1',
      'https://gateway.example/v1',
    ]) {
      expect(() => check(baseUrl)).not.toThrow();
    }
    expect(isLoopbackHost('128.0.0.1')).toBe(false);
    expect(isLoopbackHost('localhost.evil.example')).toBe(false);
  });
});
