/** `embedpipe transcribe FILE --model M`: speech to text. */
import type { Command } from 'commander';
import { numberOption } from './options.js';
import type { TranscribeFlags } from './transcribe-action.js';

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
    .option(
      '--allow-insecure-http',
      'allow a plain http:// --base-url to a non-loopback host (key in clear text)',
    )
    .option('--json', 'print JSON for scripts')
    .action(async (file: string, flags: TranscribeFlags) => {
      // Loaded here, not at the top: the gateway client is heavy and --help needs none of it.
      const { transcribeAction } = await import('./transcribe-action.js');
      await transcribeAction(file, flags);
    });
}
