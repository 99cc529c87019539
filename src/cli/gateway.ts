/** `embedpipe gateway`: the local gateway emulator, for trying embedpipe without an account. */
import type { Command } from 'commander';
import type { GatewayCommandFlags } from './gateway-action.js';
import { addTableOptions } from './table-options.js';

export function registerGateway(program: Command): void {
  addTableOptions(
    program.command('gateway').description('start the local gateway emulator (prints its base URL)'),
    'gateway',
  ).action(async (flags: GatewayCommandFlags) => {
    // Loaded here, not at the top: the emulator is heavy and --help needs none of it.
    const { gatewayAction } = await import('./gateway-action.js');
    await gatewayAction(flags);
  });
}
