/**
 * Keys never travel in clear text: every command that holds a key (run, enqueue, worker, embed,
 * models, members, transcribe, verify --sample) refuses a plain http:// base URL to a host other
 * than this machine, before any request, unless --allow-insecure-http (or the job field) says so.
 * The commands are the built CLI against a real server on this machine's LAN address.
 */

import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode, UsageError } from '../../src/errors.js';
import { GatewayClient } from '../../src/gateway/index.js';
import { isLoopbackHost, refuseClearTextKeys } from '../../src/gateway/transport.js';
import { wav } from '../helpers/audio.js';
import { runCli } from '../helpers/cli.js';
import { skipUnlessCi } from '../helpers/skip.js';
import { tempFolder } from '../helpers/temp.js';

describe('the clear-text guard', () => {
  it('refuses plain HTTP to a remote host, naming the flag', () => {
    for (const url of ['http://gateway.example/api/v1', 'http://10.0.0.5:8080/v1', 'http://[2001:db8::1]/v1'])
      expect(() => refuseClearTextKeys(url, false)).toThrow(/clear text.*--allow-insecure-http/);
    expect(() => refuseClearTextKeys('http://gateway.example/v1', true)).not.toThrow();
  });

  it('allows loopback addresses, and https anywhere', () => {
    for (const url of [
      'http://127.0.0.1:4000/v1',
      'http://127.8.9.10/v1',
      'http://localhost:4000/v1',
      'http://[::1]:4000/v1',
      'https://gateway.example/v1',
    ])
      expect(() => refuseClearTextKeys(url, false)).not.toThrow();
    expect(isLoopbackHost('128.0.0.1')).toBe(false);
    expect(isLoopbackHost('localhost.evil.example')).toBe(false);
  });

  it('is the client’s own: a client holding a key cannot be built for such a URL', () => {
    const remote = 'http://gateway.example/v1';
    expect(() => new GatewayClient({ baseUrl: remote, apiKey: 'sk-x' })).toThrow(UsageError);
    expect(() => new GatewayClient({ baseUrl: remote, managementKey: 'mk-x' })).toThrow(UsageError);
    // No key, nothing to leak.
    expect(() => new GatewayClient({ baseUrl: remote })).not.toThrow();
    expect(
      () => new GatewayClient({ baseUrl: remote, apiKey: 'sk-x', allowInsecureHttp: true }),
    ).not.toThrow();
  });
});

/** This machine's first non-loopback IPv4 address: plain HTTP to it leaves the process's loopback. */
const lanAddress = Object.values(networkInterfaces())
  .flat()
  .find((i) => i !== undefined && !i.internal && i.family === 'IPv4')?.address;

describe.skipIf(skipUnlessCi(lanAddress === undefined))(
  'every command, against a server on the LAN address',
  () => {
    let server: Server;
    let baseUrl: string;
    const seen: string[] = [];
    let dir: string;

    beforeAll(async () => {
      if (lanAddress === undefined)
        expect.fail('this test must run in CI, but the machine has no LAN address');
      dir = await tempFolder('embedpipe-transport-');
      await writeFile(join(dir, 'a.wav'), wav());
      await writeFile(join(dir, 'a.csv'), 'id,text\n1,hello\n');
      server = createServer((req, res) => {
        seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
        res.writeHead(500).end();
      });
      await new Promise<void>((resolve) => server.listen(0, lanAddress, resolve));
      baseUrl = `http://${lanAddress}:${(server.address() as AddressInfo).port}/v1`;
    });
    afterAll(async () => {
      await new Promise((resolve) => server.close(resolve));
    });

    const env = () => ({
      EMBEDPIPE_BASE_URL: baseUrl,
      EMBEDPIPE_API_KEY: 'sk-secret-key-0001',
      EMBEDPIPE_MANAGEMENT_KEY: 'mk-secret-key-0001',
    });

    it('embed, models, members, transcribe and run refuse before sending anything (exit 2)', {
      timeout: 60_000,
    }, async () => {
      const commands = [
        ['embed', 'hello', '--model', 'emu/embed-small'],
        ['models'],
        ['members'],
        ['transcribe', join(dir, 'a.wav'), '--model', 'emu/whisper'],
        ['run', '--input', join(dir, 'a.csv'), '--model', 'emu/embed-small', '--out', join(dir, 'out')],
      ];
      for (const args of commands) {
        const result = await runCli(args, env());
        expect(result.code, `${args[0]}: ${result.stderr}`).toBe(ExitCode.usage);
        expect(result.stderr).toMatch(/clear text.*--allow-insecure-http/);
        expect(result.stderr).not.toContain('sk-secret');
      }
      expect(seen).toEqual([]);
    });

    it('--allow-insecure-http lets the request go, as the user asked', async () => {
      const result = await runCli(['models', '--allow-insecure-http'], env());
      expect(result.code).not.toBe(ExitCode.usage);
      expect(seen.length).toBeGreaterThan(0);
    });
  },
);
