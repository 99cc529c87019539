/**
 * A private redis-server for one test file: its own free port and temp dir, so tests never touch the
 * machine's shared Redis and can restart or stop theirs at will. AOF is on by default, so a restart
 * keeps the data, as it does in the compose file.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

export type MaxMemoryPolicy =
  | 'noeviction'
  | 'allkeys-lru'
  | 'allkeys-lfu'
  | 'allkeys-random'
  | 'volatile-lru'
  | 'volatile-lfu'
  | 'volatile-random'
  | 'volatile-ttl';

export interface RedisServerOptions {
  /** Append-only file on (with `appendfsync everysec`) or off. Default on. */
  appendonly?: boolean;
  /** Default noeviction: what BullMQ requires. */
  maxmemoryPolicy?: MaxMemoryPolicy;
  /** How long to wait for the server to answer PING. Default 10 s. */
  startTimeoutMs?: number;
}

export interface RedisServer {
  /** `redis://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** The server's working dir (AOF and RDB files). */
  readonly dir: string;
  /** Stops the server (SIGTERM, waits for it to exit) and removes its dir. */
  stop(): Promise<void>;
  /** Stops the server and starts it again on the same port and dir: AOF data survives. */
  restart(): Promise<void>;
  /** Stops the server, keeps it down for `ms` (an outage), then starts it again as `restart` does. */
  outage(ms: number): Promise<void>;
  /** One `INFO` section (e.g. 'server', 'persistence'), as field → value. */
  info(section?: string): Promise<Record<string, string>>;
}

const BIND_ATTEMPTS = 5;

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const { appendonly = true, maxmemoryPolicy = 'noeviction', startTimeoutMs = 10_000 } = options;
  const dir = await mkdtemp(join(tmpdir(), 'embedpipe-redis-'));
  const args = (port: number) => [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    appendonly ? 'yes' : 'no',
    '--appendfsync',
    'everysec',
    '--maxmemory-policy',
    maxmemoryPolicy,
    '--daemonize',
    'no',
    '--logfile',
    '',
  ];

  let child: ChildProcess | undefined;
  let port = 0;
  // A free port found by binding port 0 may be taken again before redis-server binds it: retry.
  for (let attempt = 1; child === undefined; attempt++) {
    port = await freePort();
    try {
      child = await launch(args(port), port, startTimeoutMs);
    } catch (error) {
      if (!(error instanceof BindClash) || attempt >= BIND_ATTEMPTS) {
        await rm(dir, { recursive: true, force: true });
        throw error;
      }
    }
  }

  const url = `redis://127.0.0.1:${port}`;
  let stopped = false;
  const outage = async (ms: number) => {
    if (stopped) throw new Error('redis-server was stopped for good');
    if (child) await terminate(child);
    await new Promise((resolve) => setTimeout(resolve, ms));
    child = await launch(args(port), port, startTimeoutMs);
  };
  return {
    url,
    port,
    dir,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (child) await terminate(child);
      await rm(dir, { recursive: true, force: true });
    },
    restart: () => outage(0),
    outage,
    async info(section) {
      const redis = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
      redis.on('error', () => {}); // surfaced by connect() instead
      try {
        await redis.connect();
        return parseInfo(section === undefined ? await redis.info() : await redis.info(section));
      } finally {
        redis.disconnect();
      }
    },
  };
}

class BindClash extends Error {}

/** Every server still running, killed if the test process exits without stopping them. */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts redis-server and resolves once it answers PING; BindClash if the port was taken. */
async function launch(args: string[], port: number, timeoutMs: number): Promise<ChildProcess> {
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let log = '';
  const keep = (data: Buffer) => {
    log = (log + data.toString('utf8')).slice(-8_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<never>((_, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      running.delete(child);
      const why = `redis-server exited early (code ${code}, signal ${signal}):\n${log}`;
      reject(/address already in use/i.test(log) ? new BindClash(why) : new Error(why));
    });
  });
  exited.catch(() => {}); // observed by the race below; later exits are expected (stop, restart)
  try {
    await Promise.race([exited, answersPing(port, timeoutMs)]);
    return child;
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}

/** Polls PING until the server answers (it refuses connections, or answers LOADING, meanwhile). */
async function answersPing(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const redis = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
    });
    redis.on('error', () => {}); // a refused connection is the expected answer while starting
    try {
      await redis.connect();
      if ((await redis.ping()) === 'PONG') return;
    } catch {
      // not up yet
    } finally {
      redis.disconnect();
    }
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** SIGTERM makes Redis flush its AOF and exit cleanly; waits for the exit. */
function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => {
      running.delete(child);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** A port nobody listens on right now: bind port 0, read what the OS gave, release it. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** `INFO` text: `# Section` headers and `field:value` lines, CRLF-separated. */
function parseInfo(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    if (line === '' || line.startsWith('#')) continue;
    const colon = line.indexOf(':');
    if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return fields;
}
