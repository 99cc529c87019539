/** `embedpipe transcribe FILE --model M`: speech to text. */
import type { Command } from 'commander';
import { addTableOptions } from './table-options.js';
import type { TranscribeFlags } from './transcribe-action.js';

export function registerTranscribe(program: Command): void {
  addTableOptions(
    program
      .command('transcribe')
      .description('transcribe an audio file')
      .argument('<file>', 'audio file (wav, mp3, flac, ogg, m4a, webm)'),
    'transcribe',
  ).action(async (file: string, flags: TranscribeFlags) => {
    // Loaded here, not at the top: the gateway client is heavy and --help needs none of it.
    const { transcribeAction } = await import('./transcribe-action.js');
    await transcribeAction(file, flags);
  });
}
