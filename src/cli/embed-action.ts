/** What `embedpipe embed` does; loaded only when the command runs (see embed.ts). */
import { commandContext, type GatewayFlags, lookup, requireKey } from './context.js';
import { printJson } from './format.js';

export interface EmbedFlags extends GatewayFlags {
  model: string;
  encodingFormat?: 'float' | 'base64';
}

export async function embedAction(text: string, flags: EmbedFlags): Promise<void> {
  const context = commandContext(flags);
  requireKey(context.env, 'api');
  const client = context.client();
  try {
    const result = await lookup(client, (gateway) =>
      gateway.embeddings({ model: flags.model, input: text, encoding_format: 'base64' }),
    );
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
}
