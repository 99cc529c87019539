/** What a failed lookup means to the user: unreachable (exit 6), or a base URL without /v1 (exit 2). */
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import {
  BaseUrlError,
  connectionErrorFrom,
  explainLookupFailure,
  GatewayUnreachableError,
  gatewayErrorFromResponse,
  isUnreachableCode,
} from '../../src/gateway/errors.js';

const netError = (code: string, message = `connect ${code}`) => Object.assign(new Error(message), { code });

describe('network codes', () => {
  it('tell a gateway never reached (refused, DNS, TLS) from a flaky one', () => {
    for (const code of [
      'ECONNREFUSED',
      'ENOTFOUND',
      'EAI_AGAIN',
      'EHOSTUNREACH',
      'UND_ERR_CONNECT_TIMEOUT',
    ]) {
      expect(isUnreachableCode(code), code).toBe(true);
    }
    for (const code of ['CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'ERR_TLS_CERT_ALTNAME_INVALID']) {
      expect(isUnreachableCode(code), code).toBe(true);
    }
    for (const code of ['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'TIMEOUT', undefined]) {
      expect(isUnreachableCode(code), String(code)).toBe(false);
    }
  });

  it('give a ConnectionError exit 6 when never reached, and keep it retryable', () => {
    const refused = connectionErrorFrom(netError('ECONNREFUSED'));
    expect(refused.exitCode).toBe(ExitCode.unreachable);
    expect(refused.retryable).toBe(true);
    expect(connectionErrorFrom(netError('ECONNRESET')).exitCode).toBe(ExitCode.internal);
  });
});

describe('explainLookupFailure', () => {
  it('names the base URL and what to check when the gateway is unreachable', () => {
    const cause = connectionErrorFrom(netError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:9'));
    cause.attempts = 3;
    const error = explainLookupFailure(cause, 'https://user:secret@gw.example/v1/');
    expect(error).toBeInstanceOf(GatewayUnreachableError);
    const message = (error as Error).message;
    expect(message).toMatch(
      /^gateway unreachable at https:\/\/\[redacted\]@gw\.example\/v1 after 3 attempts/,
    );
    expect(message).toMatch(/ECONNREFUSED.*is the gateway running.*EMBEDPIPE_BASE_URL.*proxy/);
    expect(message).not.toContain('secret');
    expect((error as GatewayUnreachableError).exitCode).toBe(ExitCode.unreachable);
  });

  it('turns a 404 of the models listing into "the base URL must end in /v1"', () => {
    const notFound = gatewayErrorFromResponse({
      status: 404,
      headers: {},
      bodyText: JSON.stringify({ error: { code: 404, message: 'No such endpoint: GET /embeddings/models' } }),
      now: 0,
    });
    const error = explainLookupFailure(notFound, 'http://gw:8787', { modelsListing: true });
    expect(error).toBeInstanceOf(BaseUrlError);
    expect((error as Error).message).toMatch(
      /http:\/\/gw:8787.*version segment.*did you mean http:\/\/gw:8787\/v1\?/,
    );
    expect((error as BaseUrlError).exitCode).toBe(ExitCode.usage);
    // Any other call's 404 (an unknown model) is left as it is.
    expect(explainLookupFailure(notFound, 'http://gw:8787')).toBe(notFound);
  });
});
