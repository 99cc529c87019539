/** What `embedpipe transcribe` does; loaded only when the command runs (see transcribe.ts). */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { UsageError } from '../errors.js';
import { commandContext, type GatewayFlags, lookup, requireKey } from './context.js';
import { printJson } from './format.js';

export interface TranscribeFlags extends GatewayFlags {
  model: string;
  language?: string;
  temperature?: number;
  format?: string;
}

export async function transcribeAction(file: string, flags: TranscribeFlags): Promise<void> {
  if (flags.language !== undefined && !/^[a-z]{2}$/i.test(flags.language)) {
    throw new UsageError(`--language must be a two-letter ISO-639-1 code (got "${flags.language}")`);
  }
  const format = (flags.format ?? extname(file).slice(1)).toLowerCase();
  if (!format) throw new UsageError(`cannot tell the audio format of ${file}: pass --format`);
  let data: Buffer;
  try {
    data = await readFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(
      code === 'ENOENT' ? `audio file not found: ${file}` : `cannot read ${file}: ${code}`,
    );
  }
  const context = commandContext(flags);
  requireKey(context.env, 'api');
  const client = context.client();
  try {
    const result = await lookup(client, (gateway) =>
      gateway.transcribe({
        model: flags.model,
        audio: { data, format },
        ...(flags.language ? { language: flags.language.toLowerCase() } : {}),
        ...(flags.temperature !== undefined ? { temperature: flags.temperature } : {}),
      }),
    );
    if (flags.json) printJson(result);
    else process.stdout.write(`${result.text}\n`);
  } finally {
    await client.close();
  }
}
