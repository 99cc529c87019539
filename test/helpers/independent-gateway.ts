/**
 * A second, independent implementation of the gateway interface, written from the spec alone and on
 * purpose unlike the emulator, so the e2e tests do not lean on one server's habits: its own vector
 * function and token counting (UTF-8 bytes / 3, more than cl100k counts for prose), floats even when
 * base64 is asked, data in shuffled order with `index`, an upstream model name, no `cost` in usage,
 * no `context_length` in the model record, Retry-After as an HTTP date, and a fault every few calls.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const INDEPENDENT_KEY = 'independent-gateway-key-0001';
export const INDEPENDENT_MODEL = 'acme/embed-v2';
export const INDEPENDENT_DIMS = 48;
/** Inputs over this many (byte/3) tokens are refused with 400. */
export const INDEPENDENT_TOKEN_LIMIT = 4000;

/** The server's vector for a text: FNV-1a seeded sines, unit length. Exact as float32 after JSON. */
export function independentVector(text: string): Float32Array {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  const v = Array.from({ length: INDEPENDENT_DIMS }, (_, i) => Math.sin(h / 65_536 + i * 1.618));
  const norm = Math.hypot(...v);
  return Float32Array.from(v.map((x) => x / norm));
}

/**
 * Requests that reach the server this soon after a 429 may have been sent before the client could
 * read it (the 429 waits in its socket while the client's one thread finishes other work; on two
 * loaded cores that passed 100 ms). The emulator allows as much. A client that ignored Retry-After
 * would still be caught: the window it must respect lasts over a second.
 */
const IN_FLIGHT_GRACE_MS = 250;

/** An answer with Retry-After: when it went out, the instant it named, and whether its reader died. */
interface RetryAfterWindow {
  readonly issuedAt: number;
  readonly notBefore: number;
  /**
   * The connection it went out on closed before the instant: the process reading it was killed
   * (a live client keeps its keep-alive connection open longer than a window). Other processes
   * could not hear of a wait nobody shared: their requests inside it are not violations.
   */
  readerGone: boolean;
}

export const independentTokens = (text: string) => Math.ceil(Buffer.byteLength(text, 'utf8') / 3);

/** Fault schedule by request number: about 30% of embeddings calls fail. */
const FAULTS: Record<number, '429' | '503' | '500' | 'reset' | 'empty' | '529'> = {
  1: '429',
  3: '500',
  4: 'reset',
  6: '503',
  8: 'empty',
  9: '529',
};

export interface IndependentGateway {
  baseUrl: string;
  stats: { embeddingCalls: number; faults: number; retryAfterViolations: number; tooLong: number };
  /**
   * When each violation arrived: ms after the 429 went out, and ms before the instant it named (not
   * counting windows whose reader was killed before it could share the wait).
   */
  readonly violations: Array<{ afterIssue: number; beforeOpen: number }>;
  /** Every input the server embedded and answered (200 with data), in order of arrival. */
  embedded: string[];
  close(): Promise<void>;
}

export async function startIndependentGateway(): Promise<IndependentGateway> {
  const stats = { embeddingCalls: 0, faults: 0, retryAfterViolations: 0, tooLong: 0 };
  const arrivals: Array<{ afterIssue: number; beforeOpen: number; window: RetryAfterWindow }> = [];
  const embedded: string[] = [];
  let window: RetryAfterWindow = { issuedAt: 0, notBefore: 0, readerGone: false };
  /** Connections this server reset itself (a fault): their closing says nothing of their reader. */
  const resetHere = new WeakSet<object>();
  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const fail = (res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}) =>
    send(res, status, { error: { code: status, message, metadata: { provider_name: 'acme' } } }, headers);

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const now = Date.now(); // arrival, before the body is read
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.headers.authorization !== `Bearer ${INDEPENDENT_KEY}`)
      return fail(res, 401, 'No auth credentials found');
    if (req.method === 'GET' && req.url === '/v1/embeddings/models') {
      return send(res, 200, {
        data: [{ id: INDEPENDENT_MODEL, name: 'Acme Embed v2', pricing: { prompt: '0.0000001' } }],
      });
    }
    if (req.method !== 'POST' || req.url !== '/v1/embeddings') return fail(res, 404, 'Not Found');
    // Requests already on their way when the 429 went out (a few ms on loopback) are not violations.
    if (now > window.issuedAt + IN_FLIGHT_GRACE_MS && now < window.notBefore) {
      stats.retryAfterViolations += 1;
      arrivals.push({ afterIssue: now - window.issuedAt, beforeOpen: window.notBefore - now, window });
    }
    stats.embeddingCalls += 1;
    const fault = FAULTS[stats.embeddingCalls % 20];
    if (fault) stats.faults += 1;
    if (fault === 'reset') {
      resetHere.add(req.socket);
      return req.socket.destroy();
    }
    if (fault === '429' || fault === '503') {
      // An HTTP date has whole seconds: the instant named is at least one full second away.
      const until = Math.ceil((Date.now() + 1000) / 1000) * 1000;
      const issued: RetryAfterWindow = { issuedAt: Date.now(), notBefore: until, readerGone: false };
      const socket = req.socket;
      socket.once('close', () => {
        if (Date.now() < issued.notBefore && !resetHere.has(socket)) issued.readerGone = true;
      });
      window = issued;
      return fail(res, Number(fault), 'Rate limit exceeded', {
        'retry-after': new Date(until).toUTCString(),
      });
    }
    if (fault === '500' || fault === '529') return fail(res, Number(fault), 'Upstream trouble');
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { model?: string; input?: unknown };
    if (body.model !== INDEPENDENT_MODEL) return fail(res, 404, `Model ${body.model} not found`);
    const inputs = typeof body.input === 'string' ? [body.input] : body.input;
    if (
      !Array.isArray(inputs) ||
      inputs.length === 0 ||
      inputs.some((i) => typeof i !== 'string' || i === '')
    ) {
      return fail(res, 400, 'Invalid input');
    }
    const tokens = (inputs as string[]).map(independentTokens);
    const over = tokens.findIndex((t) => t > INDEPENDENT_TOKEN_LIMIT);
    if (over >= 0) {
      stats.tooLong += 1;
      return fail(
        res,
        400,
        `Input ${over} is too long: ${tokens[over]} tokens exceeds the limit of ${INDEPENDENT_TOKEN_LIMIT} tokens`,
      );
    }
    if (fault === 'empty') return send(res, 200, { object: 'list', data: [], model: 'acme-embed-v2-2026' });
    const data = (inputs as string[]).map((text, index) => ({
      object: 'embedding',
      index,
      embedding: Array.from(independentVector(text)),
    }));
    data.reverse(); // out of order on purpose: clients must place by index
    const prompt = tokens.reduce((a, b) => a + b, 0);
    embedded.push(...(inputs as string[]));
    return send(res, 200, {
      object: 'list',
      data,
      model: 'acme-embed-v2-2026',
      usage: { prompt_tokens: prompt, total_tokens: prompt },
    });
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => fail(res, 500, String(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    stats,
    get violations() {
      return arrivals
        .filter(({ window }) => !window.readerGone)
        .map(({ afterIssue, beforeOpen }) => ({ afterIssue, beforeOpen }));
    },
    embedded,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
