/**
 * Runs the built CLI as a user would (the bundle `bin` names, dist/bundle/): a child process with
 * its own environment.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

export const CLI = resolve('dist/bundle/main.js');
/** tsc's output, one module per source file: where the lazy loading of commands can be watched. */
export const UNBUNDLED_CLI = resolve('dist/cli/main.js');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function assertBuilt(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first (npm test does)`);
}

/** Environment for the child: no ambient keys or gateway settings leak in from the developer's shell. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], HOME: process.env['HOME'], NODE_ENV: 'test' };
  return { ...env, ...extra };
}

export function spawnCli(
  args: readonly string[],
  env: Record<string, string> = {},
): ChildProcess & { result: Promise<CliResult> } {
  assertBuilt();
  const child = spawn(process.execPath, [CLI, ...args], {
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const result = new Promise<CliResult>((resolvePromise, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolvePromise({ code, signal, stdout, stderr }));
  });
  return Object.assign(child, { result });
}

export function runCli(args: readonly string[], env: Record<string, string> = {}): Promise<CliResult> {
  return spawnCli(args, env).result;
}

/** The arguments of `embedpipe run --input <input> --model <model>`, then `more` as given. */
export function runArgs(input: string, model: string, ...more: string[]): string[] {
  return ['run', '--input', input, '--model', model, ...more];
}

/** Batches of 8 inputs, two requests at a time: many parts, so a run can be stopped half way. */
export const SMALL_BATCHES = ['--max-inputs', '8', '--concurrency', '2'] as const;
