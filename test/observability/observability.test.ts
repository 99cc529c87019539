import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { fractionDone, progressLine } from '../../src/observability/progress.js';
import { RunStats } from '../../src/observability/stats.js';
import { book } from '../helpers/ledger.js';

function capture(): { stream: Writable; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return { stream, text: () => chunks.join('') };
}

describe('logger', () => {
  it('writes JSON lines and redacts anything that could hold a key', () => {
    const out = capture();
    const logger = createLogger({ destination: out.stream, pretty: false });
    const key = 'sk-secret-0123456789abcdef';
    logger.info(
      { apiKey: key, client: { apiKey: key, headers: { authorization: `Bearer ${key}` } } },
      'calling',
    );
    logger.info({ authorization: `Bearer ${key}`, managementKey: key }, 'more');
    expect(out.text()).not.toContain(key);
    const first = JSON.parse(out.text().split('\n')[0]!);
    expect(first).toMatchObject({ msg: 'calling', apiKey: '[redacted]', client: { apiKey: '[redacted]' } });
  });
});

describe('progress', () => {
  it('counts by bytes while reading, by batches once planning is done', () => {
    const stats = new RunStats();
    stats.bytesTotal = 1000;
    stats.bytesRead = 250;
    book(stats, { planned: 10, embedded: 5 });
    expect(fractionDone(stats)).toBeCloseTo(0.25);
    stats.planningDone = true;
    book(stats, { resumed: 2 });
    expect(fractionDone(stats)).toBeCloseTo(0.7);
  });

  it('shows percentage, batches x/y, documents, vectors and tokens with rates, cost and ETA on one line', () => {
    const stats = new RunStats();
    Object.assign(stats, {
      documents: 12_345,
      chunks: 50_000,
      gatewayTokens: 2_500_000,
      requests: 40,
      retries: 3,
      cost: 0.125,
      firstRequestAt: stats.startedAt,
    });
    book(stats, { planned: 100, embedded: 50, rows: 25_000 });
    stats.planningDone = true;
    const line = progressLine(stats, 200, stats.startedAt + 10_000);
    expect(line).toMatch(
      /50% batches 50\/100 docs 12\.3k vectors 25\.0k \(2500\/s\) tokens 2\.5M \(250\.0k\/s\) req 40 retries 3 \$0\.1250 elapsed 10s eta 10s/,
    );
    expect(line).not.toContain('\n');
  });
});
