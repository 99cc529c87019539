/**
 * A real HTTP server whose answers each test scripts, one per request, in order. It records every
 * request (method, URL, headers, body) so tests can check what was sent and count what was not.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  /** Path and query, e.g. `/v1/organization/members?offset=0&limit=2`. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface ScriptedResponse {
  status?: number;
  headers?: Record<string, string>;
  /** Objects are sent as JSON; strings as they are. */
  body?: unknown;
}

export type Reply =
  | ScriptedResponse
  /** Destroy the socket without answering (a connection reset). */
  | 'reset'
  /** Never answer (the client's deadline must fire). */
  | 'hang'
  | ((req: IncomingMessage, res: ServerResponse, recorded: RecordedRequest) => void);

export interface ScriptedServer {
  /** `http://127.0.0.1:<port>/v1`. */
  baseUrl: string;
  requests: RecordedRequest[];
  /** Queues replies for the next requests. */
  reply(...replies: Reply[]): void;
  close(): Promise<void>;
}

/** An error envelope (spec 2.6). */
export function envelope(code: number, message: string, metadata?: Record<string, unknown>): unknown {
  return { error: { code, message, ...(metadata && { metadata }) } };
}

export async function startScriptedServer(): Promise<ScriptedServer> {
  const queue: Reply[] = [];
  const requests: RecordedRequest[] = [];

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(recorded);
      const reply = queue.shift();
      if (reply === undefined) {
        send(res, {
          status: 500,
          body: envelope(500, `scripted server: nothing scripted for ${recorded.url}`),
        });
      } else if (reply === 'reset') {
        req.socket.destroy();
      } else if (reply === 'hang') {
        // Leave it open; close() ends it.
      } else if (typeof reply === 'function') {
        reply(req, res, recorded);
      } else {
        send(res, reply);
      }
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    reply: (...replies) => queue.push(...replies),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function send(res: ServerResponse, { status = 200, headers = {}, body }: ScriptedResponse): void {
  const text = typeof body === 'string' ? body : body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, {
    ...(typeof body === 'string' ? {} : { 'content-type': 'application/json' }),
    ...headers,
  });
  res.end(text);
}
