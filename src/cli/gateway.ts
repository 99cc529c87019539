/** `embedpipe gateway`: the local gateway emulator, for trying embedpipe without an account. */
import type { Command } from 'commander';
import {
  EMULATOR_API_KEY,
  EMULATOR_MANAGEMENT_KEY,
  type EmulatorOptions,
  loadEmulatorConfig,
  startEmulator,
} from '../emulator/index.js';
import { integerOption } from './options.js';

interface GatewayCommandFlags {
  port?: number;
  host?: string;
  config?: string;
  latency?: number;
}

export function registerGateway(program: Command): void {
  program
    .command('gateway')
    .description('start the local gateway emulator (prints its base URL)')
    .option('--port <n>', 'port to listen on (default: any free port)', integerOption(0, 65535))
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--config <file>', 'JSON config: keys, credits, rate limits, models, faults')
    .option('--latency <ms>', 'added latency per request', integerOption(0, 600_000))
    .action(async (flags: GatewayCommandFlags) => {
      const fromFile: EmulatorOptions = flags.config ? await loadEmulatorConfig(flags.config) : {};
      const options: EmulatorOptions = {
        // A long-running gateway keeps no per-request records unless its config asks for them.
        recordRequests: false,
        ...fromFile,
        ...(flags.port !== undefined ? { port: flags.port } : {}),
        ...(flags.host !== undefined ? { host: flags.host } : {}),
        ...(flags.latency !== undefined ? { faults: { ...fromFile.faults, latencyMs: flags.latency } } : {}),
      };
      const emulator = await startEmulator(options);
      const usesDefaultKeys = !fromFile.keys;
      process.stdout.write(`${emulator.baseUrl}\n`);
      process.stderr.write(
        `gateway emulator listening on ${emulator.baseUrl}\n` +
          (usesDefaultKeys
            ? `  export EMBEDPIPE_BASE_URL=${emulator.baseUrl}\n` +
              `  export EMBEDPIPE_API_KEY=${EMULATOR_API_KEY}          # ordinary key\n` +
              `  export EMBEDPIPE_MANAGEMENT_KEY=${EMULATOR_MANAGEMENT_KEY}  # members only\n`
            : '') +
          'Ctrl-C stops it.\n',
      );
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      await emulator.close();
    });
}
