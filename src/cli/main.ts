#!/usr/bin/env node
/**
 * The `embedpipe` command. The only place that turns errors into exit codes: every error a user can
 * cause is an EmbedpipeError and prints as one line naming the problem.
 */
// First: the V8 flags, before any other module is compiled.
import './v8-flags.js';
import { Command, CommanderError } from 'commander';
import { EmbedpipeError, ExitCode, MissingKeyError } from '../errors.js';
import { TOOL } from '../version.js';
// The register* modules only declare options; each action imports its heavy modules (pipeline,
// emulator, Arrow, Parquet, undici, pino) when it runs, so --help, --version and typos start fast.
// Keep every import of this file light (test/cli/startup.test.ts checks).
import { registerDatasets } from './datasets.js';
import { registerEmbed } from './embed.js';
import { registerEnqueue } from './enqueue.js';
import { registerEval } from './eval.js';
import { registerGateway } from './gateway.js';
import { registerMembers } from './members.js';
import { registerModels } from './models.js';
import { registerQueueAdmin } from './queue-admin.js';
import { registerRun } from './run.js';
import { registerSearch } from './search.js';
import { registerSync } from './sync.js';
import { registerTranscribe } from './transcribe.js';
import { registerVerify } from './verify.js';
import { registerWorker } from './worker.js';

function buildProgram(): Command {
  const program = new Command('embedpipe')
    .description('Batch embedding pipeline: corpus in, Parquet vectors out.')
    .version(TOOL.version)
    // The program's own options (--version, --help) only before a command: after one they are the
    // command's (`verify DIR --version vN` printed the tool's version and checked nothing).
    .enablePositionalOptions()
    .showSuggestionAfterError()
    .exitOverride()
    .configureOutput({ outputError: () => {} });
  registerRun(program);
  registerEnqueue(program);
  registerWorker(program);
  registerQueueAdmin(program);
  registerDatasets(program);
  registerVerify(program);
  registerSync(program);
  registerSearch(program);
  registerEval(program);
  registerModels(program);
  registerMembers(program);
  registerTranscribe(program);
  registerEmbed(program);
  registerGateway(program);
  for (const command of program.commands) command.exitOverride().configureOutput({ outputError: () => {} });
  // A property of the machine's file systems, for every command that writes a dataset (loaded
  // here, not above: --help and --version run no action).
  program.hook('preAction', async () => {
    const [{ readEnvironment }, { setDirectWrites }] = await Promise.all([
      import('../config/env.js'),
      import('../output/direct-write.js'),
    ]);
    setDirectWrites(readEnvironment().directIo ?? true);
  });
  return program;
}

/** The command line as typed, for "re-run the same command" hints. */
function commandLine(argv: readonly string[]): string {
  const quote = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`);
  return ['embedpipe', ...argv].map(quote).join(' ');
}

function report(error: unknown, argv: readonly string[]): number {
  if (error instanceof CommanderError) {
    if (error.exitCode === 0) return 0; // --help, --version
    process.stderr.write(`embedpipe: ${error.message.replace(/^error: /, '')}\n`);
    return ExitCode.usage;
  }
  if (error instanceof EmbedpipeError) {
    let message = error.message;
    if (error.exitCode === ExitCode.credits) {
      message = `credits exhausted: ${message}. Add credits, then resume with: ${commandLine(argv)}`;
    } else if (error instanceof MissingKeyError) {
      message = `authentication: ${message}`;
    } else if (error.exitCode === ExitCode.authentication) {
      message = `authentication failed: ${message} (check EMBEDPIPE_API_KEY / EMBEDPIPE_MANAGEMENT_KEY)`;
    }
    // One line per problem (a job file reports all of its problems at once).
    process.stderr.write(`${message.replace(/^/gm, 'embedpipe: ')}\n`);
    return error.exitCode;
  }
  if (isFileSystemError(error)) {
    // A file or folder that cannot be written or read (not a folder, no permission, disk full) is
    // the user's to fix, not a bug: Node's message names the code, the call and the path.
    process.stderr.write(`embedpipe: ${error.message}\n`);
    return ExitCode.output;
  }
  process.stderr.write(
    `embedpipe: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  return ExitCode.internal;
}

/** A Node fs error (`EEXIST: file already exists, mkdir '/x'`): it carries a code, a syscall and a path. */
function isFileSystemError(error: unknown): error is NodeJS.ErrnoException & { path: string } {
  if (!(error instanceof Error)) return false;
  const { code, syscall, path } = error as NodeJS.ErrnoException;
  return typeof code === 'string' && typeof syscall === 'string' && typeof path === 'string';
}

// No top-level await: the bundle users run is CommonJS (see bundle-loader.ts).
const argv = process.argv.slice(2);
buildProgram()
  .parseAsync(argv, { from: 'user' })
  .catch((error: unknown) => {
    process.exitCode = report(error, argv);
  });
