import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULTS } from '../config/defaults.js';
import { createEmulator, type Emulator } from './emulator.js';
import { HttpError, jsonResponse } from './http.js';
import type { EmulatorOptions } from './options.js';

/*
 * The emulator over real HTTP: a thin node:http adapter around its Fetch handler (emulator.ts). It
 * turns each IncomingMessage into a Request, writes the Response back, and destroys the socket
 * where the handler rejects (no answer to give: see ConnectionReset).
 */

export interface RunningEmulator extends Emulator {
  /** e.g. http://127.0.0.1:PORT/v1 */
  readonly baseUrl: string;
  readonly port: number;
}

export async function startEmulator(options: EmulatorOptions = {}): Promise<RunningEmulator> {
  const emulator = createEmulator(options);
  const server = createServer({ noDelay: true }, (req, res) => {
    void serve(emulator, req, res);
  });
  // Clients keep connections open between batches; close() ends them explicitly.
  server.keepAliveTimeout = 60_000;
  // Node loads its Fetch classes on first use, in tens of ms: now, rather than in the first answer.
  new Headers();

  // Options are valid now (createEmulator checked them), and validation changes nothing.
  const host = options.host ?? DEFAULTS.emulator.host;
  await listen(server, options.port ?? 0, host);
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    baseUrl: `http://${urlHost}:${port}/v1`,
    port,
    handle: (request) => emulator.handle(request),
    get stats() {
      return emulator.stats;
    },
    get requests() {
      return emulator.requests;
    },
    keyLabel: (key) => emulator.keyLabel(key),
    reset: (next) => emulator.reset(next),
    close: async () => {
      await emulator.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

async function serve(emulator: Emulator, req: IncomingMessage, res: ServerResponse): Promise<void> {
  try {
    await write(res, await respond(emulator, req));
  } catch {
    // No answer to give (a 'reset' fault, or closing): the connection ends without one.
    req.socket.destroy();
  }
}

/** The handler's answer, or the adapter's own refusal of a request Fetch cannot carry. */
function respond(emulator: Emulator, req: IncomingMessage): Promise<Response> {
  let request: Request;
  try {
    request = toRequest(req);
  } catch (error) {
    const refusal = error instanceof HttpError ? error : new HttpError(400, `Bad request: ${String(error)}`);
    return Promise.resolve(jsonResponse(refusal.status, refusal.envelope()));
  }
  return emulator.handle(request);
}

/**
 * Methods the Fetch API refuses to carry (CONNECT never reaches here): the adapter refuses them
 * itself, so they are answered 405 on every path and are not counted in stats.
 */
const NOT_FETCHABLE: ReadonlySet<string> = new Set(['TRACE']);

function toRequest(req: IncomingMessage): Request {
  const method = req.method ?? 'GET';
  const url = new URL(req.url ?? '/', 'http://emulator');
  if (NOT_FETCHABLE.has(method))
    throw new HttpError(405, `Method ${method} is not allowed on ${url.pathname}`);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else if (value !== undefined) headers.set(name, value);
  }
  if (method === 'GET' || method === 'HEAD') return new Request(url, { method, headers });
  // Streamed, not read first: the handler stamps a request's arrival before reading its body.
  const body = ReadableStream.from<Uint8Array>(req);
  return new Request(url, { method, headers, body, duplex: 'half' });
}

/**
 * Writes a Response. Its body is read whole (every emulator answer is a small JSON document) so
 * content-length frames it, written right after content-type as the emulator always has.
 */
async function write(res: ServerResponse, response: Response): Promise<void> {
  const body = Buffer.from(await response.arrayBuffer());
  const { 'content-type': type, ...rest } = Object.fromEntries(response.headers);
  res.writeHead(response.status, {
    ...(type === undefined ? {} : { 'content-type': type }),
    'content-length': body.byteLength,
    ...rest,
  });
  res.end(body);
}
