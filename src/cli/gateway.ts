/** `embedpipe gateway`: the local gateway emulator, for trying embedpipe without an account. */
import type { Command } from 'commander';
import type { GatewayCommandFlags } from './gateway-action.js';
import { integerOption } from './options.js';

export function registerGateway(program: Command): void {
  program
    .command('gateway')
    .description('start the local gateway emulator (prints its base URL)')
    .option('--port <n>', 'port to listen on (default: any free port)', integerOption(0, 65535))
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--config <file>', 'JSON config: keys, credits, rate limits, models, faults')
    .option('--latency <ms>', 'added latency per request', integerOption(0, 600_000))
    .action(async (flags: GatewayCommandFlags) => {
      // Loaded here, not at the top: the emulator is heavy and --help needs none of it.
      const { gatewayAction } = await import('./gateway-action.js');
      await gatewayAction(flags);
    });
}
