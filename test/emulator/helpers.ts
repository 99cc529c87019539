/** Plain fetch helpers for the emulator tests: every test talks to a real server over HTTP. */
import {
  EMULATOR_API_KEY,
  type EmulatorOptions,
  type RunningEmulator,
  startEmulator,
} from '../../src/emulator/index.js';

/** Runs `body` against a fresh emulator on a free port, closing it whatever happens. */
export async function withEmulator(options: EmulatorOptions, body: (emu: RunningEmulator) => Promise<void>) {
  const emu = await startEmulator(options);
  try {
    await body(emu);
  } finally {
    await emu.close();
  }
}

export interface Reply {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON shapes
  body: any;
}

export async function call(
  emulator: RunningEmulator,
  path: string,
  init: { method?: string; body?: unknown; key?: string | null; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...init.headers };
  const key = init.key === undefined ? EMULATOR_API_KEY : init.key;
  if (key !== null) headers['authorization'] = `Bearer ${key}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${emulator.baseUrl}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    ...(init.body === undefined
      ? {}
      : { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === '' ? undefined : JSON.parse(text),
  };
}

export function embed(
  emulator: RunningEmulator,
  body: Record<string, unknown>,
  key?: string,
): Promise<Reply> {
  return call(emulator, '/embeddings', { body, ...(key === undefined ? {} : { key }) });
}

/** base64 of little-endian float32 → Float32Array (copied, so alignment never matters). */
export function fromBase64(text: string): Float32Array {
  const bytes = Buffer.from(text, 'base64');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Float32Array.from({ length: bytes.byteLength / 4 }, (_, i) => view.getFloat32(i * 4, true));
}

/** The error envelope of spec 2.6, with code equal to the status. */
export function expectEnvelope(reply: Reply, status: number): string {
  if (reply.status !== status)
    throw new Error(`expected ${status}, got ${reply.status}: ${JSON.stringify(reply.body)}`);
  if (reply.body?.error?.code !== status || typeof reply.body.error.message !== 'string') {
    throw new Error(`not an error envelope: ${JSON.stringify(reply.body)}`);
  }
  return reply.body.error.message as string;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
