/** --encoding and a job's input.encoding: resolved to the WHATWG name; an unknown label stops the run. */
import { describe, expect, it } from 'vitest';
import { parseJob } from '../../src/config/job.js';
import { resolveRunSettings } from '../../src/config/settings.js';
import { type ConfigError, UsageError } from '../../src/errors.js';

/** An environment with a gateway: settings need one (or --emulator). */
const GATEWAY = { baseUrl: 'http://127.0.0.1:4000/v1' };

const base = { input: 'docs', model: 'm/x' };

describe('the corpus encoding setting', () => {
  it('is utf-8 by default, and the WHATWG name of the label given', () => {
    expect(resolveRunSettings(base, undefined, GATEWAY).encoding).toBe('utf-8');
    expect(resolveRunSettings({ ...base, encoding: 'latin1' }, undefined, GATEWAY).encoding).toBe(
      'windows-1252',
    );
    expect(resolveRunSettings({ ...base, encoding: 'ISO-8859-15' }, undefined, GATEWAY).encoding).toBe(
      'iso-8859-15',
    );
    expect(resolveRunSettings({ ...base, encoding: 'utf-16le' }, undefined, GATEWAY).encoding).toBe(
      'utf-16le',
    );
  });

  it('comes from the job file, and the flag overrides it', () => {
    const job = parseJob({ input: { path: 'docs', encoding: 'latin1' }, model: 'm/x' }, '/jobs/j.json');
    expect(resolveRunSettings({}, job, GATEWAY).encoding).toBe('windows-1252');
    expect(resolveRunSettings({ encoding: 'utf-8' }, job, GATEWAY).encoding).toBe('utf-8');
  });

  it('refuses an unknown label with a UsageError naming --encoding', () => {
    let error: unknown;
    try {
      resolveRunSettings({ ...base, encoding: 'latin-9000' }, undefined, GATEWAY);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(UsageError);
    expect((error as ConfigError).field).toBe('--encoding');
    expect((error as Error).message).toMatch(/^--encoding: unknown encoding "latin-9000": use a label/);
  });

  it('refuses an unknown label in a job file, naming the file and input.encoding', () => {
    expect(() => parseJob({ input: { path: 'x', encoding: 'nope' }, model: 'm' }, 'j.json')).toThrow(
      /^j\.json: input\.encoding: an unknown encoding: use a label/,
    );
  });
});
