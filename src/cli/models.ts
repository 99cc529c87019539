/** `embedpipe models`: the gateway's embedding models. */
import type { Command } from 'commander';
import type { GatewayFlags } from './context.js';
import { addTableOptions } from './table-options.js';

export function registerModels(program: Command): void {
  addTableOptions(
    program.command('models').description('list the embedding models of the gateway'),
    'models',
  ).action(async (flags: GatewayFlags) => {
    // Loaded here, not at the top: the gateway client is heavy and --help needs none of it.
    const { modelsAction } = await import('./models-action.js');
    await modelsAction(flags);
  });
}
