import type { ErrorEnvelopeWire } from '../gateway/wire.js';
import type { EmulatorOptions } from './options.js';

export type RetryAfterFormat = NonNullable<EmulatorOptions['retryAfterFormat']>;

/**
 * An answer other than success, thrown from anywhere in a handler and written once, as the spec's
 * error envelope (2.6), by the handler. Internal to the emulator: it is an HTTP reply, not a user error.
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

/**
 * Not an answer: the connection ends without one (a 'reset' fault, or the emulator closing). A Fetch
 * Response cannot say that, so the handler rejects with this, as fetch() itself does when a server
 * resets; the node adapter destroys the socket.
 */
export class ConnectionReset extends Error {
  override readonly name = 'ConnectionReset';
  readonly code = 'ECONNRESET';
}

/** A JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The body as text. Decoded by Buffer rather than request.text(), which drops a leading BOM: the
 * emulator has always answered such a body 400, as a strict gateway does.
 */
export async function readText(request: Request): Promise<string> {
  if (request.body === null) return '';
  return Buffer.from(await request.arrayBuffer()).toString('utf8');
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpError(400, 'Request body is not valid JSON');
  }
}

/** A JSON answer. Framing (content-length) is the transport's job: see server.ts. */
export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return Response.json(body, { status, headers });
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
