#!/usr/bin/env node
/**
 * Writes jobs/job.schema.json, the JSON Schema of job files, from the zod schema that validates them
 * (`jobFileSchema` in src/config/job.ts, built from the options table in src/config/options-table.ts:
 * each field's bound, and its help and default as the description), so editors complete and check
 * jobs/*.json through their `"$schema": "./job.schema.json"`. Reads the BUILT schema: run it as
 * `npm run job-schema`, which builds first. test/config/jobs-examples.test.ts fails when the committed file differs from what
 * `renderJobSchema` makes of the current source, so the two cannot drift.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';

export const JOB_SCHEMA_PATH = fileURLToPath(new URL('../jobs/job.schema.json', import.meta.url));

/** The file's text: the zod schema as JSON Schema (draft 2020-12), with a title, 2-space JSON and a final newline. */
export function renderJobSchema(jobFileSchema) {
  const { $schema, ...schema } = z.toJSONSchema(jobFileSchema, { target: 'draft-2020-12', io: 'input' });
  const document = {
    $schema,
    $comment:
      'Generated from src/config/options-table.ts (via job.ts) by scripts/job-schema.mjs (npm run job-schema): do not edit.',
    title: 'embedpipe job file',
    description:
      'A declarative `embedpipe run JOB.json`: the same settings as the run flags (a flag overrides the ' +
      'file). Relative paths are relative to the job file.',
    ...schema,
  };
  return `${JSON.stringify(document, null, 2)}\n`;
}

async function main() {
  const built = new URL('../dist/config/job.js', import.meta.url);
  let module;
  try {
    module = await import(built.href);
  } catch (error) {
    throw new Error(`cannot load ${fileURLToPath(built)}: run \`npm run build\` first (${error.message})`);
  }
  await writeFile(JOB_SCHEMA_PATH, renderJobSchema(module.jobFileSchema));
  console.log(`wrote ${JOB_SCHEMA_PATH}`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error) => {
    console.error(error.message);
    process.exitCode = 1;
  });
}
