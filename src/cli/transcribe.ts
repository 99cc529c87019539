/** `embedpipe transcribe FILE --model M`: speech to text. */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../errors.js';
import { commandContext, type GatewayFlags } from './context.js';
import { printJson } from './format.js';
import { numberOption } from './options.js';

interface TranscribeFlags extends GatewayFlags {
  model: string;
  language?: string;
  temperature?: number;
  format?: string;
}

export function registerTranscribe(program: Command): void {
  program
    .command('transcribe')
    .description('transcribe an audio file')
    .argument('<file>', 'audio file (wav, mp3, flac, ogg, m4a, webm)')
    .requiredOption('--model <model>', 'speech-to-text model, <provider>/<model_name>')
    .option('--language <code>', 'ISO-639-1 language code (default: detected)')
    .option('--temperature <t>', 'sampling temperature, 0 to 2', numberOption(0, 2))
    .option('--format <name>', 'audio format (default: from the file extension)')
    .option('--base-url <url>', 'gateway base URL, ending in /v1 (default: $EMBEDPIPE_BASE_URL)')
    .option('--json', 'print JSON for scripts')
    .action(async (file: string, flags: TranscribeFlags) => {
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
      const client = commandContext(flags).client();
      try {
        const result = await client.transcribe({
          model: flags.model,
          audio: { data, format },
          ...(flags.language ? { language: flags.language.toLowerCase() } : {}),
          ...(flags.temperature !== undefined ? { temperature: flags.temperature } : {}),
        });
        if (flags.json) printJson(result);
        else process.stdout.write(`${result.text}\n`);
      } finally {
        await client.close();
      }
    });
}
