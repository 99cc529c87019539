import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { countTokens } from 'gpt-tokenizer/encoding/cl100k_base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  countPieces,
  type EmulatorOptions,
  loadEmulatorConfig,
  startEmulator,
} from '../../src/emulator/index.js';
import { ConfigError } from '../../src/errors.js';
import { embed, withEmulator } from './helpers.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'emulator-config-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function configFile(name: string, content: unknown): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

async function configError(content: unknown): Promise<ConfigError> {
  const error = await loadEmulatorConfig(await configFile('bad.json', content)).catch((e: unknown) => e);
  if (!(error instanceof ConfigError)) throw new Error(`expected a ConfigError, got ${String(error)}`);
  return error;
}

describe('loadEmulatorConfig', () => {
  it('loads a valid file that starts a working emulator', async () => {
    const options = {
      keys: [{ key: 'file-key', name: 'from-file', credits: 1, limits: { requestsPerMinute: 100 } }],
      faults: { seed: 3, script: ['ok', '503'], latencyMs: { min: 0, max: 1 } },
      retryAfterFormat: 'ms',
    };
    const loaded = await loadEmulatorConfig(await configFile('good.json', options));
    expect(loaded).toEqual(options);
    const emu = await startEmulator(loaded);
    try {
      expect((await embed(emu, { model: 'emu/embed-small', input: 'x' }, 'file-key')).status).toBe(200);
      expect((await embed(emu, { model: 'emu/embed-small', input: 'x' }, 'file-key')).status).toBe(503);
    } finally {
      await emu.close();
    }
  });

  it.each([
    [{ port: -1 }, 'port'],
    [{ faults: { seed: 1.5 } }, 'faults.seed'],
    [{ faults: { script: ['ok', 'boom'] } }, 'faults.script.1'],
    [{ faults: { probabilities: { '500': 0.7, '503': 0.6 } } }, 'faults.probabilities'],
    [{ faults: { probabilities: { '418': 0.1 } } }, 'faults.probabilities.418'],
    [{ faults: { latencyMs: { min: 5, max: 1 } } }, 'faults.latencyMs'],
    [{ faults: { latencyMs: 'fast' } }, 'faults.latencyMs'],
    [{ keys: [{ key: 'a' }, { key: 'b', credits: -1 }] }, 'keys.1.credits'],
    [{ keys: [{ key: 'a', limits: { requestsPerMinute: 0 } }] }, 'keys.0.limits.requestsPerMinute'],
    [{ keys: [{ key: 'a' }, { key: 'a' }] }, 'keys.1.key'],
    [{ managementKeys: ['emu-test-key'] }, 'managementKeys.0'],
    [{ retryAfterFormat: 'minutes' }, 'retryAfterFormat'],
    [{ base64Mode: 'weird' }, 'base64Mode'],
    [{ overloadedProviders: ['delta'] }, 'overloadedProviders.0'],
    [{ shufleData: true }, 'shufleData'],
    [
      {
        models: [
          {
            id: 'x/m',
            dims: 0,
            contextLength: 8,
            overLong: 'reject',
            pricePerToken: '0',
            providers: ['alpha'],
          },
        ],
      },
      'models.0.dims',
    ],
    [
      {
        models: [
          {
            id: 'x/m',
            dims: 4,
            contextLength: 8,
            overLong: 'reject',
            pricePerToken: '1e-8',
            providers: ['alpha'],
          },
        ],
      },
      'models.0.pricePerToken',
    ],
    [
      {
        models: [
          {
            id: 'x/m',
            dims: 4,
            contextLength: 8,
            overLong: 'reject',
            pricePerToken: '0',
            providers: ['zeta'],
          },
        ],
      },
      'models.0.providers.0',
    ],
    [
      {
        models: [
          {
            id: 'x/m',
            dims: 4,
            contextLength: 8,
            tokenizer: 'o200k',
            overLong: 'reject',
            pricePerToken: '0',
            providers: ['alpha'],
          },
        ],
      },
      'models.0.tokenizer',
    ],
  ])('names the offending field: %j → %s', async (content, field) => {
    const error = await configError(content);
    expect(error.field).toBe(field);
    expect(error.message.startsWith(`${field}: `)).toBe(true);
    expect(error.message).toContain('bad.json');
  });

  it("selects a model's tokenizer: 'cl100k' from a file counts with cl100k", async () => {
    const model = {
      dims: 4,
      contextLength: 64,
      overLong: 'reject',
      pricePerToken: '0',
      providers: ['alpha'],
    };
    const options = {
      models: [
        { id: 'x/cl', tokenizer: 'cl100k', ...model },
        { id: 'x/pieces', ...model },
      ],
    };
    const loaded = await loadEmulatorConfig(await configFile('tokenizer.json', options));
    expect(loaded).toEqual(options);
    const text = '東京は日本の首都です。 lorem ipsum';
    expect(countTokens(text)).not.toBe(countPieces(text));
    await withEmulator(loaded, async (emu) => {
      expect((await embed(emu, { model: 'x/cl', input: text })).body.usage.prompt_tokens).toBe(
        countTokens(text),
      );
      expect((await embed(emu, { model: 'x/pieces', input: text })).body.usage.prompt_tokens).toBe(
        countPieces(text),
      );
    });
  });

  it('reports a file that is not JSON, or is missing, against the file', async () => {
    const notJson = await configError('{ "port": ');
    expect(notJson.field).toMatch(/bad\.json$/);
    expect(notJson.message).toMatch(/not valid JSON/);
    const missing = await loadEmulatorConfig(join(dir, 'missing.json')).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ConfigError);
    expect((missing as ConfigError).message).toMatch(/cannot read/);
  });
});

describe('startEmulator options', () => {
  it('are validated the same way', async () => {
    const bad = { faults: { probabilities: { '500': 2 } } } as EmulatorOptions;
    await expect(startEmulator(bad)).rejects.toThrow(ConfigError);
    await expect(startEmulator(bad)).rejects.toThrow(/^faults\.probabilities\.500: /);
  });

  it('listen on 127.0.0.1 and a free port by default', async () => {
    const emu = await startEmulator();
    try {
      expect(emu.port).toBeGreaterThan(0);
      expect(emu.baseUrl).toBe(`http://127.0.0.1:${emu.port}/v1`);
    } finally {
      await emu.close();
    }
  });
});
