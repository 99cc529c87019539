import { mkdtemp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/config/defaults.js';
import { readEnvironment } from '../../src/config/env.js';
import { loadJobFile, parseJob } from '../../src/config/job.js';
import { resolveRunSettings } from '../../src/config/settings.js';
import { ConfigError, UsageError } from '../../src/errors.js';
import { tempFolder } from '../helpers/temp.js';

const folder = await tempFolder('embedpipe-job-');

describe('job files', () => {
  it('loads the shipped demo and nightly jobs', async () => {
    const demo = await loadJobFile('jobs/demo.json');
    expect(demo.model).toBe('emu/embed-small');
    expect(demo.input.path).toMatch(/examples\/demo\/articles\.csv$/);
    expect(demo.output?.dir).toMatch(/out\/demo$/);
    await expect(loadJobFile('jobs/nightly.example.json')).resolves.toMatchObject({ concurrency: 8 });
  });

  it('names the offending field', () => {
    expect(() => parseJob({ input: { path: 'x' }, model: 'm', concurrency: 0 }, 'job.json')).toThrow(
      /job\.json: concurrency: /,
    );
    expect(() => parseJob({ input: { path: 'x', format: 'xml' }, model: 'm' }, 'job.json')).toThrow(
      /input\.format/,
    );
    expect(() => parseJob({ input: { path: 'x' }, model: 'm', typo: 1 }, 'job.json')).toThrow(ConfigError);
    expect(() => parseJob({ model: 'm' }, 'job.json')).toThrow(/job\.json: input/);
  });

  it('says when the file is missing or not JSON', async () => {
    await expect(loadJobFile('jobs/nope.json')).rejects.toThrow(/job file not found: jobs\/nope\.json/);
    const dir = await mkdtemp(join(folder, 'embedpipe-job-'));
    await writeFile(join(dir, 'bad.json'), '{ nope');
    await expect(loadJobFile(join(dir, 'bad.json'))).rejects.toThrow(UsageError);
  });
});

describe('run settings', () => {
  const job = parseJob(
    { input: { path: 'corpus.csv' }, model: 'job/model', concurrency: 3, provider: { order: ['a', 'b'] } },
    '/jobs/j.json',
  );

  it('a flag beats the job file, which beats the environment, which beats the default', () => {
    const fromJob = resolveRunSettings({}, job, { baseUrl: 'http://env/v1' });
    expect(fromJob).toMatchObject({
      model: 'job/model',
      concurrency: 3,
      baseUrl: 'http://env/v1',
      input: '/jobs/corpus.csv',
    });
    expect(fromJob.maxInputs).toBe(DEFAULTS.maxInputsPerRequest);
    expect(fromJob.provider.order).toEqual(['a', 'b']);
    const fromFlags = resolveRunSettings(
      { model: 'flag/model', concurrency: 5, baseUrl: 'http://flag/v1', providerOrder: 'x, y' },
      job,
      { baseUrl: 'http://env/v1' },
    );
    expect(fromFlags).toMatchObject({ model: 'flag/model', concurrency: 5, baseUrl: 'http://flag/v1' });
    expect(fromFlags.provider.order).toEqual(['x', 'y']);
  });

  it('refuses bad values naming the flag', () => {
    expect(() => resolveRunSettings({ input: 'x', model: 'm', format: 'xml' }, undefined, {})).toThrow(
      /--format/,
    );
    expect(() =>
      resolveRunSettings({ input: 'x', model: 'm', dataCollection: 'maybe' }, undefined, {}),
    ).toThrow(/--data-collection/);
    expect(() => resolveRunSettings({ input: 'x' }, undefined, {})).toThrow(/no model/);
    expect(() => resolveRunSettings({ model: 'm' }, undefined, {})).toThrow(/no input/);
  });
});

describe('environment', () => {
  it('is read in one place, blank values ignored', () => {
    expect(
      readEnvironment({
        EMBEDPIPE_BASE_URL: ' http://gw/v1 ',
        EMBEDPIPE_API_KEY: 'k',
        EMBEDPIPE_MANAGEMENT_KEY: '',
        EMBEDPIPE_HTTP_REFERER: 'https://example.org',
        EMBEDPIPE_SERVICE_TITLE: 'Indexer',
      }),
    ).toEqual({
      baseUrl: 'http://gw/v1',
      apiKey: 'k',
      referer: 'https://example.org',
      serviceTitle: 'Indexer',
    });
  });

  it('reads EMBEDPIPE_DIRECT_IO as a switch, and names the variable when it is neither on nor off', () => {
    expect(readEnvironment({ EMBEDPIPE_DIRECT_IO: 'off' }).directIo).toBe(false);
    expect(readEnvironment({ EMBEDPIPE_DIRECT_IO: ' ON ' }).directIo).toBe(true);
    expect(readEnvironment({ EMBEDPIPE_DIRECT_IO: '0' }).directIo).toBe(false);
    expect(readEnvironment({}).directIo).toBeUndefined();
    expect(() => readEnvironment({ EMBEDPIPE_DIRECT_IO: 'maybe' })).toThrow(UsageError);
    expect(() => readEnvironment({ EMBEDPIPE_DIRECT_IO: 'maybe' })).toThrow(/EMBEDPIPE_DIRECT_IO.*"maybe"/);
  });
});
