/**
 * createGateway, the one place a command builds its client: a command's resolved settings go in as
 * they are, the keys come from the environment, and what a command wires in (another key, the
 * management key, a dispatcher) reaches the client. Against the emulator, over a socket.
 */
import { Agent, type Dispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/cli/gateway-edge.js';
import { resolveWorkerSettings } from '../../src/config/settings.js';
import {
  EMULATOR_API_KEY,
  EMULATOR_MANAGEMENT_KEY,
  type RunningEmulator,
  startEmulator,
} from '../../src/emulator/index.js';
import { AuthenticationError } from '../../src/gateway/errors.js';

let emulator: RunningEmulator;
beforeAll(async () => {
  emulator = await startEmulator({ recordRequests: false });
});
afterAll(async () => {
  await emulator.close();
});

describe('createGateway', () => {
  it("takes a command's resolved settings as they are: --concurrency is the client's window", async () => {
    const env = { baseUrl: emulator.baseUrl, apiKey: EMULATOR_API_KEY };
    const settings = resolveWorkerSettings({ concurrency: 3 }, env);
    const client = createGateway(settings, env);
    try {
      expect(client.baseUrl).toBe(emulator.baseUrl);
      expect(client.maxInFlight).toBe(3);
      expect((await client.listEmbeddingModels()).length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  });

  it("uses the wiring's key over EMBEDPIPE_API_KEY, and the management key only when asked", async () => {
    const env = { apiKey: 'sk-wrong', managementKey: EMULATOR_MANAGEMENT_KEY };
    const wrong = createGateway({ baseUrl: emulator.baseUrl }, env);
    const keyed = createGateway({ baseUrl: emulator.baseUrl }, env, { apiKey: EMULATOR_API_KEY });
    const management = createGateway({ baseUrl: emulator.baseUrl }, env, { management: true });
    try {
      await expect(wrong.listEmbeddingModels()).rejects.toBeInstanceOf(AuthenticationError);
      expect((await keyed.listEmbeddingModels()).length).toBeGreaterThan(0);
      await expect(keyed.listMembers()).rejects.toThrow(/EMBEDPIPE_MANAGEMENT_KEY|management/i);
      expect((await management.listMembers()).totalCount).toBeGreaterThanOrEqual(0);
    } finally {
      await Promise.all([wrong.close(), keyed.close(), management.close()]);
    }
  });

  it('sends through a dispatcher wired in', async () => {
    let dispatched = 0;
    const agent = new Agent();
    const counting = agent.compose(
      (dispatch: Dispatcher['dispatch']): Dispatcher['dispatch'] =>
        (options, handler) => {
          dispatched += 1;
          return dispatch(options, handler);
        },
    );
    const env = { apiKey: EMULATOR_API_KEY };
    const client = createGateway({ baseUrl: emulator.baseUrl }, env, { dispatcher: counting });
    try {
      await client.listEmbeddingModels();
      expect(dispatched).toBe(1);
    } finally {
      await client.close();
      await agent.close();
    }
  });
});
