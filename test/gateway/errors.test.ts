import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { EmbedpipeError, ExitCode } from '../../src/errors.js';
import {
  AuthenticationError,
  BadGatewayError,
  BadRequestError,
  ConnectionError,
  connectionErrorFrom,
  GatewayError,
  GatewayTimeoutError,
  gatewayErrorFromResponse,
  InsufficientCreditsError,
  InternalServerError,
  InvalidResponseError,
  invalidResponseError,
  NotFoundError,
  ProviderOverloadedError,
  RateLimitError,
  RequestTimeoutError,
  ServiceUnavailableError,
} from '../../src/gateway/errors.js';
import { envelope } from './scripted-server.js';

const now = Date.parse('2025-01-01T00:00:00Z');

function fromResponse(status: number, body: unknown = envelope(status, 'boom'), headers = {}) {
  const bodyText = typeof body === 'string' ? body : JSON.stringify(body);
  return gatewayErrorFromResponse({ status, headers, bodyText, now });
}

describe('gatewayErrorFromResponse', () => {
  it.each([
    [400, BadRequestError, false, ExitCode.usage],
    [401, AuthenticationError, false, ExitCode.authentication],
    [402, InsufficientCreditsError, false, ExitCode.credits],
    [403, AuthenticationError, false, ExitCode.authentication],
    [404, NotFoundError, false, ExitCode.usage],
    [408, RequestTimeoutError, true, ExitCode.internal],
    [429, RateLimitError, true, ExitCode.internal],
    [500, InternalServerError, true, ExitCode.internal],
    [502, BadGatewayError, true, ExitCode.internal],
    [503, ServiceUnavailableError, true, ExitCode.internal],
    [524, GatewayTimeoutError, true, ExitCode.internal],
    [529, ProviderOverloadedError, true, ExitCode.internal],
  ])('maps %i to its class, retryable flag and exit code', (status, ErrorClass, retryable, exitCode) => {
    const error = fromResponse(status);
    expect(error).toBeInstanceOf(ErrorClass);
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toBeInstanceOf(EmbedpipeError);
    expect(error.name).toBe(ErrorClass.name);
    expect(error.status).toBe(status);
    expect(error.code).toBe(status);
    expect(error.retryable).toBe(retryable);
    expect(error.exitCode).toBe(exitCode);
  });

  it('treats unknown 4xx as permanent and unknown 5xx as transient', () => {
    const teapot = fromResponse(418);
    expect(teapot.constructor).toBe(GatewayError);
    expect(teapot.retryable).toBe(false);
    expect(teapot.message).toBe('gateway 418 error: boom');
    expect(fromResponse(599).retryable).toBe(true);
    expect(fromResponse(302, '').retryable).toBe(false);
  });

  it('reads the envelope: message, code, metadata, provider, raw, and a request id header', () => {
    const raw = '{"error":{"type":"overloaded"}}';
    const error = fromResponse(
      429,
      { ...(envelope(429, 'Rate limit exceeded', { provider_name: 'Acme', raw }) as object), user_id: 'u1' },
      { 'x-request-id': 'req-123', 'cf-ray': 'ray-9' },
    );
    expect(error.gatewayMessage).toBe('Rate limit exceeded');
    expect(error.metadata).toEqual({ provider_name: 'Acme', raw });
    expect(error.providerName).toBe('Acme');
    expect(error.raw).toBe(raw);
    expect(error.requestId).toBe('req-123');
    expect(error.message).toBe(
      'gateway 429 rate limited: Rate limit exceeded (provider: Acme, request id: req-123)',
    );
  });

  it('takes the request id from cf-ray or x-generation-id when x-request-id is absent', () => {
    expect(fromResponse(500, undefined, { 'cf-ray': 'ray-1' }).requestId).toBe('ray-1');
    expect(fromResponse(500, undefined, { 'x-generation-id': 'gen-1' }).requestId).toBe('gen-1');
    expect(fromResponse(500).requestId).toBeUndefined();
  });

  it('keeps error.code from the envelope even when it differs from the status', () => {
    expect(fromResponse(400, envelope(422, 'nope')).code).toBe(422);
  });

  it('parses Retry-After into retryAfterMs', () => {
    expect(fromResponse(429, undefined, { 'retry-after': '2' }).retryAfterMs).toBe(2000);
    expect(fromResponse(503, undefined, { 'retry-after-ms': '15.5' }).retryAfterMs).toBe(16);
    expect(fromResponse(429).retryAfterMs).toBeUndefined();
  });

  it('tolerates a non-JSON body, keeping a short one-line excerpt', () => {
    const html = `<html>\n  <body>\n    <h1>502 Bad Gateway</h1>${'x'.repeat(1000)}\n  </body>\n</html>`;
    const error = fromResponse(502, html);
    expect(error).toBeInstanceOf(BadGatewayError);
    expect(error.message).toMatch(
      /^gateway 502 provider error: non-JSON body: "<html> <body> <h1>502 Bad Gateway/,
    );
    expect(error.message).not.toContain('\n');
    expect(error.message.length).toBeLessThan(300);
    expect(fromResponse(500, '').message).toBe('gateway 500 internal server error: (empty body)');
  });

  it('tolerates JSON that is not the envelope', () => {
    expect(fromResponse(500, { message: 'plain message' }).gatewayMessage).toBe('plain message');
    expect(fromResponse(500, { error: 'just a string' }).gatewayMessage).toBe('just a string');
    expect(fromResponse(500, [1, 2]).gatewayMessage).toBe('unexpected body: "[1,2]"');
    expect(fromResponse(500, { error: { code: 500 } }).gatewayMessage).toBe('(no message)');
  });

  it('scrubs the given secrets from everything it keeps', () => {
    const key = 'sk-test-0123456789abcdef';
    const error = gatewayErrorFromResponse({
      status: 401,
      headers: {},
      bodyText: JSON.stringify(envelope(401, `invalid key Bearer ${key}`, { raw: `header was ${key}` })),
      now,
      secrets: [key],
    });
    expect(error.message).toBe('gateway 401 authentication failed: invalid key Bearer [redacted]');
    expect(inspect(error, { depth: 10 })).not.toContain(key);
    expect(JSON.stringify(error)).not.toContain(key);
    expect(JSON.stringify(error.metadata)).not.toContain(key);
  });
});

describe('invalidResponseError', () => {
  it('is retryable and names the problem', () => {
    const error = invalidResponseError({
      status: 200,
      headers: { 'x-request-id': 'r1' },
      reason: 'data is empty',
    });
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error.retryable).toBe(true);
    expect(error.message).toBe('gateway 200 invalid response: data is empty (request id: r1)');
  });
});

describe('connectionErrorFrom', () => {
  it('builds a retryable status-0 error that keeps its cause', () => {
    const cause = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    const error = connectionErrorFrom(cause);
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error.status).toBe(0);
    expect(error.retryable).toBe(true);
    expect(error.networkCode).toBe('ECONNRESET');
    expect(error.cause).toBe(cause);
    expect(error.message).toBe('gateway connection failed: ECONNRESET socket hang up');
    expect(error.exitCode).toBe(ExitCode.internal);
  });

  it('describes our own deadline', () => {
    const error = connectionErrorFrom(new Error('aborted'), { timedOutAfterMs: 250 });
    expect(error.networkCode).toBe('TIMEOUT');
    expect(error.retryable).toBe(true);
    expect(error.message).toBe('gateway connection failed: no complete response within 250 ms');
  });

  it('replaces a cause that shows a secret with a scrubbed copy', () => {
    const key = 'sk-live-abcdefghijklmnop';
    const cause = Object.assign(new Error(`refused for Bearer ${key}`), {
      code: 'ECONNREFUSED',
      headers: { authorization: key },
    });
    const error = connectionErrorFrom(cause, { secrets: [key] });
    expect(error.cause).not.toBe(cause);
    expect((error.cause as Error).message).toBe('refused for Bearer [redacted]');
    expect((error.cause as { code?: string }).code).toBe('ECONNREFUSED');
    for (const shown of [error.message, inspect(error, { depth: 10 }), JSON.stringify(error)]) {
      expect(shown).not.toContain(key);
    }
  });

  it('serializes to a compact key-free record', () => {
    const error = connectionErrorFrom(Object.assign(new Error('x'), { code: 'EPIPE' }));
    expect(JSON.parse(JSON.stringify(error))).toEqual({
      name: 'ConnectionError',
      message: 'gateway connection failed: EPIPE x',
      status: 0,
      code: 0,
      retryable: true,
      attempts: 1,
      networkCode: 'EPIPE',
    });
  });
});
