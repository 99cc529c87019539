import { describe, expect, it } from 'vitest';
import type { BatchRecord } from '../../src/domain.js';
import { Ledger } from '../../src/observability/ledger.js';

const record = (over: Partial<BatchRecord> = {}): BatchRecord => ({
  rows: 10,
  dims: 4,
  chunks: 10,
  promptTokens: 100,
  cost: 0.001,
  requests: 1,
  retries: 0,
  failures: [],
  ...over,
});

const failure = (chunkIndex: number) => ({ documentId: 'd', chunkIndex, batchId: 'b', message: 'refused' });

describe('the ledger’s count of chunks sent, reused and deduplicated', () => {
  it('folds what each record says: rows not reused or deduplicated were sent, failures included', () => {
    const ledger = new Ledger();
    ledger.commit(record({ reused: 3, deduplicated: 2 }));
    ledger.commit(record({ rows: 8, failures: [failure(0), failure(1)] }));
    expect(ledger.committed).toMatchObject({ sent: 5 + 10, reused: 3, deduplicated: 2 });
  });

  it('counts every row of a batch that came with the version replaced as reused, whatever its record says', () => {
    const ledger = new Ledger();
    ledger.carry(record({ reused: 1 }), true);
    ledger.carry(record({ rows: 6, deduplicated: 6 }), true);
    expect(ledger.carried).toMatchObject({ sent: 0, reused: 16, deduplicated: 0, rows: 16 });
  });

  it('counts a batch an earlier attempt of the same version committed as that attempt did', () => {
    const ledger = new Ledger();
    ledger.carry(record({ reused: 4 }));
    ledger.commit(record({ deduplicated: 1 }));
    ledger.carry(undefined);
    expect(ledger.dataset()).toMatchObject({ sent: 6 + 9, reused: 4, deduplicated: 1, batches: 3 });
  });

  it('never counts a negative send when reused rows were dropped at commit', () => {
    const ledger = new Ledger();
    ledger.commit(record({ rows: 2, reused: 3 }));
    expect(ledger.committed).toMatchObject({ sent: 0, reused: 3 });
  });
});
