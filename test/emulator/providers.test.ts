import { describe, expect, it } from 'vitest';
import type { EmulatorOptions } from '../../src/emulator/index.js';
import { embed, expectEnvelope, withEmulator } from './helpers.js';

const large = (provider?: Record<string, unknown>) => ({
  model: 'emu/embed-large',
  input: 'routed',
  ...(provider ? { provider } : {}),
});

describe('provider routing (spec 4.3)', () => {
  it("uses the model's default order, and provider.order when given", async () => {
    await withEmulator({}, async (emu) => {
      expect((await embed(emu, large())).body.provider).toBe('alpha');
      expect((await embed(emu, large({ order: ['gamma', 'beta'] }))).body.provider).toBe('gamma');
      expect(emu.stats.byProvider).toEqual({ alpha: 1, gamma: 1 });
    });
  });

  it("skips unknown names in order, and falls back to the model's order when none is valid", async () => {
    await withEmulator({}, async (emu) => {
      expect((await embed(emu, large({ order: ['nobody', 'beta'] }))).body.provider).toBe('beta');
      expect((await embed(emu, large({ order: ['nobody'] }))).body.provider).toBe('alpha');
      // gamma exists but does not serve emu/embed-small.
      expect(
        (await embed(emu, { model: 'emu/embed-small', input: 'x', provider: { order: ['gamma'] } })).body
          .provider,
      ).toBe('alpha');
    });
  });

  it('routes around an overloaded provider when fallbacks are allowed (the default)', async () => {
    await withEmulator({ overloadedProviders: ['alpha'] }, async (emu) => {
      expect((await embed(emu, large())).body.provider).toBe('beta');
      expect(
        (await embed(emu, large({ order: ['alpha', 'gamma'], allow_fallbacks: true }))).body.provider,
      ).toBe('gamma');
    });
  });

  it('answers 529 naming the provider when it is overloaded and fallbacks are not allowed', async () => {
    await withEmulator({ overloadedProviders: ['beta'] }, async (emu) => {
      const reply = await embed(emu, large({ order: ['beta'], allow_fallbacks: false }));
      expect(expectEnvelope(reply, 529)).toMatch(/overloaded/);
      expect(reply.body.error.metadata.provider_name).toBe('beta');
      expect(emu.stats.spend).toEqual({});
    });
  });

  it('answers 529 when every provider of the model is overloaded', async () => {
    await withEmulator({ overloadedProviders: ['alpha', 'beta'] }, async (emu) => {
      const reply = await embed(emu, { model: 'emu/embed-small', input: 'x' });
      expect(reply.status).toBe(529);
      expect(reply.body.error.metadata.provider_name).toBe('alpha');
    });
  });

  it("data_collection 'deny' keeps requests away from providers that collect data", async () => {
    await withEmulator({ overloadedProviders: ['alpha', 'beta'] }, async (emu) => {
      // Only gamma is free, but it collects data.
      expect((await embed(emu, large())).body.provider).toBe('gamma');
      expect((await embed(emu, large({ data_collection: 'deny' }))).status).toBe(529);
    });
    await withEmulator({}, async (emu) => {
      expect((await embed(emu, large({ order: ['gamma'], data_collection: 'deny' }))).body.provider).toBe(
        'alpha',
      );
    });
  });

  it('answers 404 when no provider of the model matches the data policy', async () => {
    const options: EmulatorOptions = {
      providers: [{ name: 'snoop', collectsData: true }],
      models: [
        {
          id: 'x/m',
          dims: 2,
          contextLength: 8,
          overLong: 'reject',
          pricePerToken: '0',
          providers: ['snoop'],
        },
      ],
    };
    await withEmulator(options, async (emu) => {
      const reply = await embed(emu, { model: 'x/m', input: 'x', provider: { data_collection: 'deny' } });
      expect(expectEnvelope(reply, 404)).toMatch(/data policy/);
    });
  });
});
