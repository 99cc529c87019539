/** `embedpipe models`: the gateway's embedding models. */
import type { Command } from 'commander';
import { commandContext, type GatewayFlags } from './context.js';
import { printJson, printTable } from './format.js';

export function registerModels(program: Command): void {
  program
    .command('models')
    .description('list the embedding models of the gateway')
    .option('--base-url <url>', 'gateway base URL, ending in /v1 (default: $EMBEDPIPE_BASE_URL)')
    .option('--json', 'print JSON for scripts')
    .action(async (flags: GatewayFlags) => {
      const client = commandContext(flags).client();
      try {
        const models = await client.listEmbeddingModels();
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
    });
}
