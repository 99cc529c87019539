/** Job files: every problem reported at once; an --input override re-infers a contradicting format. */
import { describe, expect, it } from 'vitest';
import { parseJob } from '../../src/config/job.js';
import { resolveRunSettings } from '../../src/config/settings.js';
import { ConfigError } from '../../src/errors.js';

/** An environment with a gateway: settings need one (or --emulator). */
const GATEWAY = { baseUrl: 'http://127.0.0.1:4000/v1' };

describe('job file problems', () => {
  it('are all reported, one line each, with the file name and the field path', () => {
    let error: unknown;
    try {
      parseJob(
        {
          input: { path: 'x', format: 'xml', extra: 1 },
          model: 'm',
          concurrency: 0,
          retry: { maxAttempts: 0 },
        },
        'j.json',
      );
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const lines = (error as ConfigError).message.split('\n');
    expect(lines).toHaveLength(4);
    for (const line of lines) expect(line).toMatch(/^j\.json: /);
    expect(lines.map((l) => l.split(': ')[1]).sort()).toEqual([
      'concurrency',
      'input',
      'input.format',
      'retry.maxAttempts',
    ]);
    expect((error as ConfigError).issues).toHaveLength(4);
  });

  it('keeps the one-line form for a single problem', () => {
    expect(() => parseJob({ input: { path: 'x' }, model: 'm', concurrency: 0 }, 'j.json')).toThrow(
      /^j\.json: concurrency: [^\n]+$/,
    );
  });
});

describe('the input format of a job whose input a flag replaces', () => {
  const job = parseJob({ input: { path: 'docs', format: 'text' }, model: 'm/x' }, '/jobs/j.json');
  const logs = parseJob({ input: { path: 'a.log', format: 'text' }, model: 'm/x' }, '/jobs/j.json');

  it("is inferred again when the new input's extension differs", () => {
    expect(resolveRunSettings({ input: 'docs.csv' }, job, GATEWAY).format).toBeUndefined();
    expect(resolveRunSettings({ input: 'b.jsonl' }, logs, GATEWAY).format).toBeUndefined();
  });

  it("is kept for the job's own input, or a new input of the same kind", () => {
    expect(resolveRunSettings({}, job, GATEWAY).format).toBe('text');
    expect(resolveRunSettings({ input: 'other-folder' }, job, GATEWAY).format).toBe('text');
    expect(resolveRunSettings({ input: 'b.LOG' }, logs, GATEWAY).format).toBe('text');
  });

  it('--format always wins', () => {
    expect(resolveRunSettings({ input: 'docs.csv', format: 'jsonl' }, job, GATEWAY).format).toBe('jsonl');
  });
});
