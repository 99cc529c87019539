import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../helpers/redis-server.js';

describe('startRedisServer (test helper)', () => {
  const servers: RedisServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  it('starts a private server whose AOF data survives a restart, and stops it', async () => {
    const server = await startRedisServer();
    servers.push(server);
    expect(server.url).toBe(`redis://127.0.0.1:${server.port}`);
    expect(server.port).not.toBe(6379);

    const persistence = await server.info('persistence');
    expect(persistence['aof_enabled']).toBe('1');
    const redis = new Redis(server.url, { maxRetriesPerRequest: 0 });
    expect(await redis.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    expect(await redis.config('GET', 'appendfsync')).toEqual(['appendfsync', 'everysec']);
    expect(await redis.config('GET', 'save')).toEqual(['save', '']);
    await redis.set('survivor', 'still here');
    redis.disconnect();

    const pidBefore = (await server.info('server'))['process_id'];
    await server.restart();
    expect((await server.info('server'))['process_id']).not.toBe(pidBefore);

    const again = new Redis(server.url, { maxRetriesPerRequest: 0 });
    expect(await again.get('survivor')).toBe('still here');
    again.disconnect();

    await server.stop();
    expect(existsSync(server.dir)).toBe(false);
    await expect(connectTo(server.port)).rejects.toThrow(/ECONNREFUSED/);
  });

  it('honours appendonly off and another eviction policy; two servers side by side', async () => {
    const [a, b] = await Promise.all([
      startRedisServer({ appendonly: false, maxmemoryPolicy: 'allkeys-lru' }),
      startRedisServer(),
    ]);
    servers.push(a, b);
    expect(a.port).not.toBe(b.port);
    expect((await a.info('persistence'))['aof_enabled']).toBe('0');
    expect((await a.info('memory'))['maxmemory_policy']).toBe('allkeys-lru');

    // Without AOF (and with RDB snapshots off) a restart starts empty.
    const redis = new Redis(a.url, { maxRetriesPerRequest: 0 });
    await redis.set('ephemeral', '1');
    redis.disconnect();
    await a.restart();
    const again = new Redis(a.url, { maxRetriesPerRequest: 0 });
    expect(await again.get('ephemeral')).toBeNull();
    again.disconnect();
  });
});

/** Resolves when something listens on the port; rejects with the socket error otherwise. */
function connectTo(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.end();
      resolve();
    });
    socket.once('error', reject);
  });
}
