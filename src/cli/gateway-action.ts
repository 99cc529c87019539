/** What `embedpipe gateway` does; loaded only when the command runs (see gateway.ts). */
import { DEFAULTS } from '../config/defaults.js';
import {
  EMULATOR_API_KEY,
  EMULATOR_MANAGEMENT_KEY,
  type EmulatorOptions,
  loadEmulatorConfig,
  startEmulator,
} from '../emulator/index.js';

export interface GatewayCommandFlags {
  port?: number;
  host?: string;
  config?: string;
  latency?: number;
}

export async function gatewayAction(flags: GatewayCommandFlags): Promise<void> {
  const fromFile: EmulatorOptions = flags.config ? await loadEmulatorConfig(flags.config) : {};
  const options: EmulatorOptions = {
    // A long-running gateway keeps no per-request records unless its config asks for them.
    recordRequests: false,
    ...fromFile,
    ...(flags.port !== undefined ? { port: flags.port } : {}),
    // Loopback unless --host says otherwise, whatever the config file names: its keys are known to all.
    host: flags.host ?? DEFAULTS.emulator.host,
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
}
