import { readFile } from 'node:fs/promises';
import * as z from 'zod';
import { ConfigError } from '../errors.js';
import { SCRIPT_ENTRIES } from './faults.js';
import { EMULATOR_API_KEY, EMULATOR_MANAGEMENT_KEY } from './keys.js';
import type { EmulatorOptions } from './options.js';
import { DEFAULT_PROVIDERS } from './providers.js';
import { TOKENIZER_NAMES } from './tokens.js';

/*
 * One schema for both ways of configuring an emulator: the options of startEmulator and the JSON
 * config file. Objects are strict, so a misspelt field is an error naming it rather than a default
 * silently kept.
 */

const positiveInt = z.number().int().positive();
const nonNegative = z.number().min(0);
const probability = z.number().min(0).max(1);
const label = z.string().min(1);
const usdDecimal = z.string().regex(/^\d+(\.\d+)?$/, 'must be a decimal string of USD, such as "0.00000002"');

const embeddingModel = z.strictObject({
  id: label,
  name: label.exactOptional(),
  dims: positiveInt,
  contextLength: positiveInt,
  tokenizer: z.enum(TOKENIZER_NAMES).exactOptional(),
  listContextLength: z.boolean().exactOptional(),
  overLong: z.enum(['truncate', 'reject']),
  pricePerToken: usdDecimal,
  inputModalities: z
    .array(z.enum(['text', 'image']))
    .min(1)
    .exactOptional(),
  providers: z.array(label).min(1),
  maxInputs: positiveInt.exactOptional(),
  semantics: z.enum(['hash', 'bag-of-words']).exactOptional(),
  bigrams: z.boolean().exactOptional(),
});

const transcriptionModel = z.strictObject({
  id: label,
  name: label.exactOptional(),
  pricePerSecond: usdDecimal,
  providers: z.array(label).min(1),
});

const key = z.strictObject({
  key: label,
  name: label.exactOptional(),
  credits: nonNegative.exactOptional(),
  limits: z
    .strictObject({
      requestsPerMinute: positiveInt.exactOptional(),
      tokensPerMinute: positiveInt.exactOptional(),
      maxInFlight: positiveInt.exactOptional(),
      windowMs: positiveInt.exactOptional(),
    })
    .exactOptional(),
});

const faults = z.strictObject({
  seed: z.number().int().exactOptional(),
  probabilities: z
    .strictObject({
      '429': probability.exactOptional(),
      '500': probability.exactOptional(),
      '502': probability.exactOptional(),
      '503': probability.exactOptional(),
      '524': probability.exactOptional(),
      '529': probability.exactOptional(),
      reset: probability.exactOptional(),
      empty: probability.exactOptional(),
      slow: probability.exactOptional(),
    })
    .refine((p) => Object.values(p).reduce((sum, x) => sum + x, 0) <= 1, 'must sum to at most 1')
    .exactOptional(),
  script: z.array(z.enum(SCRIPT_ENTRIES)).exactOptional(),
  latencyMs: z
    .union([nonNegative, z.strictObject({ min: nonNegative, max: nonNegative })], {
      error: 'must be a number of ms or {min, max}',
    })
    .refine((l) => typeof l === 'number' || l.min <= l.max, 'min must not exceed max')
    .exactOptional(),
  retryAfterSeconds: nonNegative.exactOptional(),
  slowMs: nonNegative.exactOptional(),
  paths: z.array(z.string().startsWith('/', 'must start with "/"')).exactOptional(),
});

const options = z
  .strictObject({
    port: z.number().int().min(0).max(65_535).exactOptional(),
    host: label.exactOptional(),
    models: z.array(embeddingModel).exactOptional(),
    transcriptionModels: z.array(transcriptionModel).exactOptional(),
    providers: z
      .array(z.strictObject({ name: label, collectsData: z.boolean().exactOptional() }))
      .exactOptional(),
    keys: z.array(key).exactOptional(),
    managementKeys: z.array(label).exactOptional(),
    overloadedProviders: z.array(label).exactOptional(),
    faults: faults.exactOptional(),
    retryAfterFormat: z.enum(['seconds', 'http-date', 'ms']).exactOptional(),
    rateLimitHeaders: z.boolean().exactOptional(),
    base64Mode: z.enum(['normal', 'empty', 'floats']).exactOptional(),
    shuffleData: z.boolean().exactOptional(),
    omitIndex: z.boolean().exactOptional(),
    members: z.number().int().min(0).exactOptional(),
    recordRequests: z.boolean().exactOptional(),
  })
  .superRefine((o, ctx) => {
    // Names that must refer to something, and identifiers that must be unique.
    const providers = new Set((o.providers ?? DEFAULT_PROVIDERS).map((p) => p.name));
    const unknownProvider = (name: string, path: (string | number)[]) => {
      if (!providers.has(name)) ctx.addIssue({ code: 'custom', path, message: `unknown provider "${name}"` });
    };
    o.models?.forEach((m, i) => {
      m.providers.forEach((p, j) => {
        unknownProvider(p, ['models', i, 'providers', j]);
      });
      if (m.bigrams !== undefined && m.semantics !== 'bag-of-words') {
        ctx.addIssue({
          code: 'custom',
          path: ['models', i, 'bigrams'],
          message: "needs semantics 'bag-of-words'",
        });
      }
    });
    o.transcriptionModels?.forEach((m, i) => {
      m.providers.forEach((p, j) => {
        unknownProvider(p, ['transcriptionModels', i, 'providers', j]);
      });
    });
    o.overloadedProviders?.forEach((p, i) => {
      unknownProvider(p, ['overloadedProviders', i]);
    });

    const duplicates = (values: string[], path: (i: number) => (string | number)[], what: string) => {
      const seen = new Set<string>();
      values.forEach((value, i) => {
        if (seen.has(value)) ctx.addIssue({ code: 'custom', path: path(i), message: `duplicate ${what}` });
        seen.add(value);
      });
    };
    const models = o.models?.map((m) => m.id) ?? [];
    duplicates(models, (i) => ['models', i, 'id'], 'model id');
    o.transcriptionModels?.forEach((m, i) => {
      if (models.includes(m.id)) {
        ctx.addIssue({
          code: 'custom',
          path: ['transcriptionModels', i, 'id'],
          message: 'also an embedding model',
        });
      }
    });
    const apiKeys = (o.keys ?? [{ key: EMULATOR_API_KEY }]).map((k) => k.key);
    duplicates(apiKeys, (i) => ['keys', i, 'key'], 'key');
    duplicates(o.keys?.map((k, i) => k.name ?? `key${i}`) ?? [], (i) => ['keys', i, 'name'], 'key name');
    (o.managementKeys ?? [EMULATOR_MANAGEMENT_KEY]).forEach((k, i) => {
      if (apiKeys.includes(k)) {
        ctx.addIssue({ code: 'custom', path: ['managementKeys', i], message: 'also an ordinary API key' });
      }
    });
  });

// The schema's output is EmulatorOptions exactly: the compiler holds the two together.
const schema: z.ZodType<EmulatorOptions> = options;

/** Validates options (from code or a file); ConfigError names the first offending field, e.g. `faults.seed`. */
export function validateEmulatorOptions(input: unknown, source = 'emulator options'): EmulatorOptions {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const path = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]] : issue.path;
  const field = path.length > 0 ? path.map(String).join('.') : '(root)';
  const message = issue.code === 'unrecognized_keys' ? 'unknown field' : issue.message;
  throw new ConfigError(field, `${message} (${source})`);
}

/** Reads and validates an emulator config file (JSON, the shape of EmulatorOptions). */
export async function loadEmulatorConfig(path: string): Promise<EmulatorOptions> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ConfigError(path, `cannot read the emulator config: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(path, `the emulator config is not valid JSON: ${(error as Error).message}`);
  }
  return validateEmulatorOptions(json, path);
}
