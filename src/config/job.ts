/**
 * Declarative job files (jobs/*.json): the same settings as `embedpipe run` flags, validated with zod
 * so an error names the offending field. The schema is built from the options table: each option's
 * `job` path, bound and help. Relative paths in a job file are relative to the file.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import * as z from 'zod';
import { ENCODING_EXAMPLES, encodingName } from '../corpus/utf8.js';
import { ConfigError, UsageError } from '../errors.js';
import type { JobFile } from './option-types.js';
import { describeOption, longFlag, type OptionSpec, optionEntries } from './options-table.js';

/** The zod type of one option's job-file field, with its bound and the help as its description. */
function fieldSchema(spec: OptionSpec): z.ZodType {
  const type = spec.type;
  let schema: z.ZodType;
  switch (type.kind) {
    case 'int': {
      // positive(), not min(1): the schema (and its messages) stay what they were before the table.
      const int = type.min === 1 ? z.number().int().positive() : z.number().int().min(type.min);
      schema = type.max === undefined ? int : int.max(type.max);
      break;
    }
    case 'number':
      schema = z.number().min(type.min).max(type.max);
      break;
    case 'enum':
      schema = z.enum(type.choices as [string, ...string[]]);
      break;
    case 'url':
      schema = z.url();
      break;
    case 'switch':
      schema = z.boolean();
      break;
    case 'list':
      schema = z.array(z.string().min(1)).min(1);
      break;
    case 'provider-options':
      schema = z.record(z.string().min(1), z.record(z.string(), z.unknown()));
      break;
    case 'encoding':
      schema = z
        .string()
        .refine(
          (label) => encodingName(label) !== undefined,
          `an unknown encoding: use ${ENCODING_EXAMPLES}`,
        );
      break;
    case 'language':
      schema = z.string().regex(/^[a-z]{2}$/, 'an ISO-639-1 code such as "en"');
      break;
    default:
      schema = z.string().min(1);
  }
  const flag = longFlag(spec);
  const description = `${describeOption(spec)}${flag ? ` [${flag}]` : ''}`;
  return (spec.required ? schema : schema.optional()).describe(description);
}

/** Each option's field at its `job` path: top-level fields and one level of groups, in the table's order. */
function jobShape(): Record<string, z.ZodType> {
  const shape = new Map<string, z.ZodType | Map<string, z.ZodType>>();
  const required = new Set<string>();
  for (const [, spec] of optionEntries()) {
    if (spec.job === undefined) continue;
    const [head = '', leaf] = spec.job.split('.');
    if (leaf === undefined) {
      shape.set(head, fieldSchema(spec));
      continue;
    }
    const group = shape.get(head);
    const fields = group instanceof Map ? group : new Map<string, z.ZodType>();
    shape.set(head, fields.set(leaf, fieldSchema(spec)));
    if (spec.required) required.add(head);
  }
  return Object.fromEntries(
    [...shape].map(([name, field]) => {
      if (!(field instanceof Map)) return [name, field];
      const group = z.strictObject(Object.fromEntries(field));
      return [name, required.has(name) ? group : group.optional()];
    }),
  );
}

/**
 * The job file's schema. Its shape is built at run time from the options table, and JobFile
 * (option-types.ts) derives the same shape from the table's types, hence the cast.
 */
export const jobFileSchema = z.strictObject({
  $schema: z.string().optional(),
  description: z.string().optional(),
  ...jobShape(),
}) as unknown as z.ZodType<JobFile>;

export type { JobFile } from './option-types.js';

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
