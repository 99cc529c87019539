/**
 * pino logger for embedpipe: JSON lines on stderr, pretty when stderr is a terminal. Anything that
 * could hold a key is redacted by path, and keys are never handed to the logger in the first place.
 */
import { createRequire } from 'node:module';
import { type Logger, pino } from 'pino';
import type pinoPretty from 'pino-pretty';

export type { Logger } from 'pino';

/** Paths censored in every log line, at the top level and one level down. */
export const REDACT_PATHS = [
  'apiKey',
  'managementKey',
  'key',
  'authorization',
  'Authorization',
  'headers.authorization',
  'headers.Authorization',
  '*.apiKey',
  '*.managementKey',
  '*.authorization',
  '*.Authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
];

export interface LoggerOptions {
  level?: string;
  /** Pretty output (default: when the destination is a TTY). */
  pretty?: boolean;
  /** Where lines go (default: stderr, so stdout stays free for --json output). */
  destination?: NodeJS.WritableStream;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const destination = options.destination ?? process.stderr;
  const isTty = (destination as { isTTY?: boolean }).isTTY === true;
  const base = {
    level: options.level ?? 'info',
    base: null,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  };
  if (options.pretty ?? isTty) {
    // Loaded only for a terminal: a cron job or a pipe writes JSON lines and skips its measurable load
    // (docs/benchmarks.md, "Design figures").
    const pretty = createRequire(import.meta.url)('pino-pretty') as typeof pinoPretty;
    return pino(
      base,
      pretty({ destination, colorize: isTty, ignore: 'pid,hostname', translateTime: 'HH:MM:ss', sync: true }),
    );
  }
  return pino(base, destination as pino.DestinationStream);
}

/** A logger that drops everything (library use and tests that do not look at logs). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
