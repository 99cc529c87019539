/**
 * The shipped job files (jobs/*.json) and their JSON Schema: every example loads, the committed
 * schema is what scripts/job-schema.mjs makes of the current zod schema, and a broken job file on
 * disk reports every problem with its path.
 */
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { jobFileSchema, loadJobFile } from '../../src/config/job.js';
import { ConfigError } from '../../src/errors.js';
import { tempFolder } from '../helpers/temp.js';

const folder = await tempFolder('embedpipe-jobs-');

const JOBS = resolve('jobs');
const SCHEMA_FILE = 'job.schema.json';

/** The job files shipped in jobs/, by name. */
async function jobFiles(): Promise<string[]> {
  return (await readdir(JOBS)).filter((name) => name.endsWith('.json') && name !== SCHEMA_FILE).sort();
}

describe('jobs/ examples', () => {
  it('are the demo, the nightly job and the model migration', async () => {
    expect(await jobFiles()).toEqual(['demo.json', 'model-migration.example.json', 'nightly.example.json']);
  });

  it('every one loads, points its editor at the schema and says what it is for', async () => {
    for (const name of await jobFiles()) {
      const job = await loadJobFile(join(JOBS, name));
      expect(job.$schema, name).toBe(`./${SCHEMA_FILE}`);
      expect(job.description?.length, name).toBeGreaterThan(40);
    }
  });

  it('the nightly job is capped and incremental; the migration re-embeds its corpus into the same folder', async () => {
    const nightly = await loadJobFile(join(JOBS, 'nightly.example.json'));
    const migration = await loadJobFile(join(JOBS, 'model-migration.example.json'));
    for (const job of [nightly, migration]) {
      expect(job.maxCostUsd).toBeGreaterThan(0);
      expect(job.gateway?.emulator).toBeUndefined();
      expect(job.output?.keepVersions).toBeGreaterThanOrEqual(1);
    }
    expect(nightly.provider?.order?.length).toBeGreaterThan(0);
    expect(migration.input).toEqual(nightly.input);
    expect(migration.output?.dir).toBe(nightly.output?.dir);
    expect(migration.model).not.toBe(nightly.model);
  });
});

describe('jobs/job.schema.json', () => {
  it('is what `npm run job-schema` generates from the current zod schema (regenerate it when this fails)', async () => {
    // The script renders the built schema; here it renders the source one, so no build is needed.
    const script = pathToFileURL(resolve('scripts/job-schema.mjs')).href;
    const { renderJobSchema } = (await import(script)) as { renderJobSchema: (schema: unknown) => string };
    const committed = await readFile(join(JOBS, SCHEMA_FILE), 'utf8');
    expect(committed).toBe(renderJobSchema(jobFileSchema));
  });

  it('describes the fields editors complete, and refuses unknown ones as the loader does', async () => {
    const schema = JSON.parse(await readFile(join(JOBS, SCHEMA_FILE), 'utf8')) as {
      required: string[];
      additionalProperties: boolean;
      properties: Record<string, { properties?: Record<string, unknown> }>;
    };
    expect(schema.required).toEqual(['input', 'model']);
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(['$schema', 'description', 'maxCostUsd']),
    );
    expect(Object.keys(schema.properties['output']?.properties ?? {})).toContain('keepVersions');
  });
});

describe('a broken job file on disk', () => {
  it('reports all three problems, each naming the file and the field path, nested ones in full', async () => {
    const dir = await mkdtemp(join(folder, 'embedpipe-jobs-'));
    const file = join(dir, 'broken.json');
    await writeFile(
      file,
      JSON.stringify(
        {
          $schema: './job.schema.json',
          input: { path: 'docs', format: 'text' },
          model: 'openai/text-embedding-3-small',
          output: { keepVersions: -1 },
          provider: { order: ['openai', ''] },
          maxCostUsd: '5',
        },
        null,
        2,
      ),
    );
    const error = await loadJobFile(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    const { issues, message } = error as ConfigError;
    expect(issues.map((issue) => issue.field).sort()).toEqual(
      [`${file}: maxCostUsd`, `${file}: output.keepVersions`, `${file}: provider.order.1`].sort(),
    );
    const lines = message.split('\n');
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line.startsWith(`${file}: `)).toBe(true);
    expect(message).toMatch(/maxCostUsd: .*number/);
  });
});
