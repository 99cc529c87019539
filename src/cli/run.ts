/** `embedpipe run [JOB]`: the whole pipeline in one process, no services. */
import type { Command } from 'commander';
import { integerOption, numberOption } from './options.js';
import type { RunCommandFlags } from './run-action.js';

export function registerRun(program: Command): void {
  addRunOptions(
    program
      .command('run')
      .description('embed a corpus into a Parquet dataset, in this process')
      .argument('[job]', 'job file (jobs/*.json); flags override it'),
  )
    .option('--dry-run', 'plan and count tokens and cost; call no embeddings')
    .option('--json', 'print the summary as JSON on stdout')
    .action(async (jobPath: string | undefined, flags: RunCommandFlags) => {
      // Loaded here, not at the top: the pipeline, emulator, Arrow and Parquet take ~0.5 s to load
      // and --help or a typo needs none of them.
      const { runAction } = await import('./run-action.js');
      await runAction(jobPath, flags);
    });
}

/** The options `run` and `enqueue` share: how the corpus is read, planned and sent. */
export function addRunOptions(command: Command): Command {
  return command
    .option('--input <path>', 'CSV, JSONL, a folder of .txt/.md files, of images, or of audio files')
    .option(
      '--format <format>',
      'csv | jsonl | text | images | audio (default: from the extension; a folder holding images: images, audio files: audio)',
    )
    .option('--id-field <name>', 'id column or key (default: id)')
    .option('--text-field <name>', 'text column or key (default: text); with an image, its caption')
    .option(
      '--encoding <name>',
      'encoding of text that is not UTF-8: windows-1252 (latin1), iso-8859-15, utf-16le (text files only)… (default: utf-8)',
    )
    .option(
      '--image-field <name>',
      'CSV/JSONL column or key holding an image: http(s) URL, data URL, or a path relative to the file',
    )
    .option(
      '--max-image-bytes <n>',
      'largest image; a larger one is a reject (default: 20971520)',
      integerOption(1),
    )
    .option(
      '--max-image-bytes-per-request <n>',
      'summed image data URL bytes per request (default: 20971520)',
      integerOption(1),
    )
    .option(
      '--audio-field <name>',
      'CSV/JSONL column or key holding the path of an audio file (relative to the file): transcribed, then embedded',
    )
    .option(
      '--max-audio-bytes <n>',
      'largest audio file; a larger one is a reject (default: 26214400)',
      integerOption(1),
    )
    .option(
      '--stt-model <model>',
      'speech-to-text model for audio, <provider>/<model_name> (required for audio)',
    )
    .option('--language <code>', 'audio: ISO-639-1 language code (default: detected by the gateway)')
    .option('--temperature <t>', 'audio: sampling temperature, 0 to 2', numberOption(0, 2))
    .option(
      '--stt-provider-options <json>',
      'audio: provider passthrough, e.g. \'{"openai":{"prompt":"…"}}\'',
    )
    .option('--stt-concurrency <n>', 'transcription requests in flight (default: 4)', integerOption(1, 256))
    .option(
      '--stt-price-per-minute <usd>',
      'audio: USD per minute, for --dry-run estimates (default: what this dataset was billed)',
      numberOption(0, 1e6),
    )
    .option('--model <model>', 'embedding model, <provider>/<model_name>')
    .option('--out <dir>', 'output folder (default: out)')
    .option('--output-format <format>', 'parquet | arrow (default: parquet)')
    .option('--base-url <url>', 'gateway base URL, ending in /v1 (default: $EMBEDPIPE_BASE_URL)')
    .option('--emulator', 'start the local gateway emulator in-process and use it')
    .option('--concurrency <n>', 'requests in flight (default: 8)', integerOption(1, 1024))
    .option('--max-inputs <n>', 'inputs per request (default: 128)', integerOption(1, 2048))
    .option('--max-tokens-per-request <n>', 'summed tokens per request (default: 300000)', integerOption(1))
    .option(
      '--max-tokens <n>',
      "tokens per chunk (default: from the model's context length)",
      integerOption(1),
    )
    .option('--overlap <n>', 'tokens shared by consecutive chunks (default: 0)', integerOption(0))
    .option('--encoding-format <format>', 'base64 | float (default: base64)')
    .option('--provider-order <a,b>', 'providers in order of preference')
    .option('--allow-fallbacks', 'let the gateway use backup providers')
    .option('--no-allow-fallbacks', 'never let the gateway use backup providers')
    .option('--data-collection <policy>', 'deny: only providers that do not collect data')
    .option('--max-attempts <n>', 'HTTP attempts per request (default: 8)', integerOption(1, 100))
    .option(
      '--max-retry-after <seconds>',
      'longest Retry-After waited for; a longer one fails the batch, left for a re-run (default: 300)',
      integerOption(0, 86_400),
    )
    .option(
      '--commit-interval <ms>',
      'longest an embedded batch waits to be committed with others (default: 2000)',
      integerOption(0, 600_000),
    )
    .option(
      '--allow-insecure-http',
      'allow a plain http:// --base-url to a non-loopback host (key in clear text)',
    )
    .option('--follow-symlinks', 'follow symlinks in a text folder that point outside it')
    .option('--force', "delete another model's or plan's unfinished files in --out")
    .option(
      '--max-cost <usd>',
      'stop before the run would spend more than this (USD); a re-run resumes',
      numberOption(0, 1e9),
    )
    .option(
      '--keep-versions <n>',
      'old versions of the dataset kept after the switch to the new one (default: 1)',
      integerOption(0, 1000),
    );
}
