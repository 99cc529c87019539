import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorEnvelopeWire } from '../gateway/wire.js';
import type { EmulatorOptions } from './options.js';

export type RetryAfterFormat = NonNullable<EmulatorOptions['retryAfterFormat']>;

/**
 * An answer other than success, thrown from anywhere in a handler and written once, as the spec's
 * error envelope (2.6), by the server. Internal to the emulator: it is an HTTP reply, not a user error.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly metadata?: { provider_name?: string; raw?: unknown; [k: string]: unknown },
    /** When set, the answer carries a Retry-After telling the client to wait this long. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }

  envelope(): ErrorEnvelopeWire {
    return {
      error: {
        code: this.status,
        message: this.message,
        ...(this.metadata ? { metadata: this.metadata } : {}),
      },
      user_id: null,
    };
  }
}

/** A JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export async function readText(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpError(400, 'Request body is not valid JSON');
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/**
 * Retry-After headers for a wait of `waitMs`, and the wait they actually promise (rounded up to
 * what the format can say), which is what the honour check holds clients to.
 */
export function retryAfterHeaders(
  waitMs: number,
  format: RetryAfterFormat,
  nowWallMs = Date.now(),
): { headers: Record<string, string>; promisedMs: number } {
  switch (format) {
    case 'seconds': {
      const seconds = Math.ceil(waitMs / 1000);
      return { headers: { 'retry-after': String(seconds) }, promisedMs: seconds * 1000 };
    }
    case 'ms': {
      const ms = Math.ceil(waitMs);
      return { headers: { 'retry-after-ms': String(ms) }, promisedMs: ms };
    }
    case 'http-date': {
      // An HTTP-date has whole seconds: round the instant up so it is never earlier than the fit.
      const at = Math.ceil((nowWallMs + waitMs) / 1000) * 1000;
      return { headers: { 'retry-after': new Date(at).toUTCString() }, promisedMs: at - nowWallMs };
    }
  }
}
