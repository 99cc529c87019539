/**
 * A proxy in front of a gateway that refuses chosen embeddings requests with a 400 (as a gateway
 * refuses inputs it will never take) and passes everything else through.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RefusingProxy {
  /** `http://127.0.0.1:<port>/v1`. */
  readonly baseUrl: string;
  close(): Promise<void>;
}

/**
 * Starts a proxy to `upstream` (a base URL ending in /v1). Every embeddings request's inputs go to
 * `refuses` first: true answers 400 "refused by the test proxy", a string answers 400 with that
 * message, without reaching the upstream.
 */
export async function startRefusingProxy(
  upstream: string,
  refuses: (inputs: string[]) => boolean | string,
): Promise<RefusingProxy> {
  const origin = upstream.replace(/\/v1$/, '');
  const proxy = createServer((req, res) => {
    const body: Buffer[] = [];
    req.on('data', (chunk: Buffer) => body.push(chunk));
    req.on('end', async () => {
      const text = Buffer.concat(body).toString('utf8');
      if (req.url?.endsWith('/embeddings')) {
        const input = (JSON.parse(text) as { input: string[] }).input;
        const refused = refuses(input);
        if (refused !== false) {
          const message = refused === true ? 'refused by the test proxy' : refused;
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { code: 400, message } }));
          return;
        }
      }
      const answer = await fetch(`${origin}${req.url}`, {
        method: req.method ?? 'GET',
        headers: { authorization: req.headers.authorization ?? '', 'content-type': 'application/json' },
        ...(req.method === 'POST' ? { body: text } : {}),
      });
      res.writeHead(answer.status, {
        'content-type': answer.headers.get('content-type') ?? 'application/json',
      });
      res.end(Buffer.from(await answer.arrayBuffer()));
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1`,
    close: async () => {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };
}
