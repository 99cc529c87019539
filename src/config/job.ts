/**
 * Declarative job files (jobs/*.json): the same settings as `embedpipe run` flags, validated with zod
 * so an error names the offending field. Relative paths in a job file are relative to the file.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { ENCODING_EXAMPLES, encodingName } from '../corpus/utf8.js';
import { ConfigError, UsageError } from '../errors.js';

const positiveInt = z.number().int().positive();

export const jobFileSchema = z.strictObject({
  $schema: z.string().optional(),
  description: z.string().optional(),
  input: z.strictObject({
    path: z.string().min(1),
    format: z.enum(['csv', 'jsonl', 'text', 'images', 'audio']).optional(),
    idField: z.string().min(1).optional(),
    textField: z.string().min(1).optional(),
    /** Encoding of the text (`--encoding`): what is not valid UTF-8 is read in it (default utf-8). */
    encoding: z
      .string()
      .refine((label) => encodingName(label) !== undefined, `an unknown encoding: use ${ENCODING_EXAMPLES}`)
      .optional(),
    /** CSV column or JSONL property holding an image: http(s) URL, data URL, or a path relative to the file. */
    imageField: z.string().min(1).optional(),
    /** Largest image in bytes (`--max-image-bytes`): a larger one is a reject. */
    maxImageBytes: positiveInt.optional(),
    /** CSV column or JSONL property holding the path of an audio file, relative to the file (`--audio-field`). */
    audioField: z.string().min(1).optional(),
    /** Largest audio file in bytes (`--max-audio-bytes`): a larger one is a reject. */
    maxAudioBytes: positiveInt.optional(),
    /** Follow symlinks in a text folder that point outside it (default: rejected). */
    followSymlinks: z.boolean().optional(),
  }),
  model: z.string().min(1),
  output: z
    .strictObject({
      dir: z.string().min(1).optional(),
      format: z.enum(['parquet', 'arrow']).optional(),
      /** Old versions of the same model kept after a run switches to a new one (default 1). */
      keepVersions: z.number().int().min(0).max(1000).optional(),
    })
    .optional(),
  gateway: z
    .strictObject({
      baseUrl: z.url().optional(),
      /** Start the local gateway emulator in-process and use it (the demo). */
      emulator: z.boolean().optional(),
      timeoutMs: positiveInt.optional(),
      /** Allow plain http:// to a non-loopback host (the API key travels in clear text). */
      allowInsecureHttp: z.boolean().optional(),
    })
    .optional(),
  chunking: z
    .strictObject({
      maxTokens: positiveInt.optional(),
      overlap: z.number().int().nonnegative().optional(),
    })
    .optional(),
  batching: z
    .strictObject({
      maxInputs: positiveInt.max(2048).optional(),
      maxTokensPerRequest: positiveInt.optional(),
      /** Summed data URL bytes per request of images (`--max-image-bytes-per-request`). */
      maxImageBytesPerRequest: positiveInt.optional(),
    })
    .optional(),
  concurrency: positiveInt.max(1024).optional(),
  /** Speech to text for audio corpora (`--stt-model`, `--language`, `--temperature`, …). */
  transcription: z
    .strictObject({
      /** Speech-to-text model, `<provider>/<model_name>`: required for an audio corpus. */
      model: z.string().min(1).optional(),
      /** ISO-639-1 code; detected by the gateway when absent. */
      language: z
        .string()
        .regex(/^[a-z]{2}$/, 'an ISO-639-1 code such as "en"')
        .optional(),
      temperature: z.number().min(0).max(2).optional(),
      /** Provider passthrough, keyed by provider name (sent as `provider.options`). */
      providerOptions: z.record(z.string().min(1), z.record(z.string(), z.unknown())).optional(),
      /** Transcription requests in flight (`--stt-concurrency`). */
      concurrency: positiveInt.max(256).optional(),
      /** USD per minute of audio, for `--dry-run` estimates (`--stt-price-per-minute`). */
      pricePerMinute: z.number().nonnegative().optional(),
    })
    .optional(),
  /** Stop before the run would spend more than this many USD (`--max-cost`). */
  maxCostUsd: z.number().nonnegative().optional(),
  encodingFormat: z.enum(['base64', 'float']).optional(),
  provider: z
    .strictObject({
      order: z.array(z.string().min(1)).min(1).optional(),
      allowFallbacks: z.boolean().optional(),
      dataCollection: z.enum(['allow', 'deny']).optional(),
    })
    .optional(),
  retry: z
    .strictObject({
      maxAttempts: positiveInt.max(100).optional(),
      baseDelayMs: positiveInt.optional(),
      maxDelayMs: positiveInt.optional(),
    })
    .optional(),
});

export type JobFile = z.infer<typeof jobFileSchema>;

/** Parses and validates a job file; paths inside it become absolute (relative to the file). */
export async function loadJobFile(path: string): Promise<JobFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(
      code === 'ENOENT' ? `job file not found: ${path}` : `cannot read job file ${path}: ${code}`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`job file ${path} is not valid JSON: ${(error as Error).message}`);
  }
  return parseJob(json, path);
}

export function parseJob(json: unknown, path: string): JobFile {
  const result = jobFileSchema.safeParse(json);
  if (!result.success) {
    // Every problem at once, each with the file and the field, so one edit fixes them all.
    const [first, ...more] = result.error.issues.map((issue) => ({
      field: `${path}: ${issue.path.length > 0 ? issue.path.join('.') : '(top level)'}`,
      message: issue.message,
    }));
    throw new ConfigError(first!.field, first!.message, more);
  }
  const job = result.data;
  const base = dirname(resolve(path));
  const absolute = (p: string) => resolve(base, p);
  return {
    ...job,
    input: { ...job.input, path: absolute(job.input.path) },
    ...(job.output
      ? { output: { ...job.output, ...(job.output.dir ? { dir: absolute(job.output.dir) } : {}) } }
      : {}),
  };
}
