/**
 * The gateway a command embeds a few texts through (`search`'s query, `verify --sample`): the one
 * `--base-url` (or EMBEDPIPE_BASE_URL) names with the key from the environment, or with `--emulator` the
 * local emulator started in this process. `close` stops both.
 */
import type { RunningEmulator } from '../emulator/index.js';
import type { GatewayClient } from '../gateway/index.js';
import { commandContext, type GatewayFlags, requireKey } from './context.js';
import { createGateway } from './gateway-edge.js';

export interface QueryGateway {
  readonly client: GatewayClient;
  close(): Promise<void>;
}

export async function openQueryGateway(
  flags: GatewayFlags & { emulator?: boolean },
  why: string,
): Promise<QueryGateway> {
  const context = commandContext(flags);
  let emulator: RunningEmulator | undefined;
  let client: GatewayClient;
  if (flags.emulator) {
    const { EMULATOR_API_KEY, startEmulator } = await import('../emulator/index.js');
    emulator = await startEmulator({ recordRequests: false });
    client = createGateway({ baseUrl: emulator.baseUrl }, context.env, { apiKey: EMULATOR_API_KEY });
  } else {
    requireKey(context.env, 'api', ` (${why}; or pass --emulator)`);
    client = context.client();
  }
  return {
    client,
    async close() {
      await client.close();
      await emulator?.close();
    },
  };
}
