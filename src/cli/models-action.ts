/** What `embedpipe models` does; loaded only when the command runs (see models.ts). */
import { commandContext, type GatewayFlags, lookup, requireKey } from './context.js';
import { printJson, printTable } from './format.js';

export async function modelsAction(flags: GatewayFlags): Promise<void> {
  const context = commandContext(flags);
  requireKey(context.env, 'api');
  const client = context.client();
  try {
    const models = await lookup(client, (gateway) => gateway.listEmbeddingModels(), { modelsListing: true });
    if (flags.json) {
      printJson(models.map((m) => m.raw));
      return;
    }
    printTable(
      ['MODEL', 'CONTEXT', 'USD / 1M TOKENS', 'INPUT'],
      models.map((m) => [
        m.id,
        m.contextLength !== undefined ? String(m.contextLength) : '-',
        m.pricing?.promptPerToken !== undefined ? (m.pricing.promptPerToken * 1e6).toFixed(4) : '-',
        (m.inputModalities ?? ['text']).join('+'),
      ]),
    );
  } finally {
    await client.close();
  }
}
