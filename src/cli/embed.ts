/** `embedpipe embed TEXT --model M`: one embedding, by hand. */
import type { Command } from 'commander';
import { commandContext, type GatewayFlags } from './context.js';
import { printJson } from './format.js';

interface EmbedFlags extends GatewayFlags {
  model: string;
  encodingFormat?: 'float' | 'base64';
}

export function registerEmbed(program: Command): void {
  program
    .command('embed')
    .description('embed one text and print its vector')
    .argument('<text>', 'the text to embed')
    .requiredOption('--model <model>', 'embedding model, <provider>/<model_name>')
    .option('--base-url <url>', 'gateway base URL, ending in /v1 (default: $EMBEDPIPE_BASE_URL)')
    .option('--json', 'print JSON for scripts')
    .action(async (text: string, flags: EmbedFlags) => {
      const client = commandContext(flags).client();
      try {
        const result = await client.embeddings({
          model: flags.model,
          input: text,
          encoding_format: 'base64',
        });
        const vector = Array.from(result.vectors[0] ?? []);
        if (flags.json) {
          printJson({
            model: result.model ?? flags.model,
            provider: result.provider,
            dims: result.dims,
            usage: result.usage,
            embedding: vector,
          });
          return;
        }
        const head = vector
          .slice(0, 8)
          .map((v) => v.toFixed(6))
          .join(', ');
        process.stdout.write(
          `model ${result.model ?? flags.model}${result.provider ? ` via ${result.provider}` : ''}, ${result.dims} dims` +
            `${result.usage?.promptTokens !== undefined ? `, ${result.usage.promptTokens} tokens` : ''}\n[${head}${vector.length > 8 ? ', …' : ''}]\n`,
        );
      } finally {
        await client.close();
      }
    });
}
