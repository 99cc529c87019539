import { describe, expect, it } from 'vitest';
import type { Pacing } from '../../src/gateway/index.js';
import { WorkerMetrics } from '../../src/observability/metrics.js';
import { describePacing, readPacing } from '../../src/observability/pacing.js';
import { progressFields, progressLine } from '../../src/observability/progress.js';
import { RunStats } from '../../src/observability/stats.js';

const held: Pacing = {
  rate: {
    paced: { requests: 114 },
    source: { requests: 'learned' },
    measured: { requests: 113, tokens: 9_000 },
    holding: true,
  },
  window: { limit: 8, active: 2, queued: 0 },
};
const windowFull: Pacing = {
  rate: { paced: {}, source: {}, measured: { requests: 900, tokens: 70_000 }, holding: false },
  window: { limit: 8, active: 8, queued: 5 },
};
const idle: Pacing = { window: { limit: 8, active: 1, queued: 0 } };

describe('what holds the requests back', () => {
  it('names the gateway rate, the in-flight window or the producer', () => {
    expect(readPacing(held).limitedBy).toBe('gateway rate');
    expect(readPacing(windowFull).limitedBy).toBe('in-flight window');
    expect(readPacing(idle).limitedBy).toBe('producer');
    expect(describePacing(readPacing(held))).toBe('paced 114 req/min (learned), held by gateway rate');
    expect(describePacing(readPacing(idle))).toBe('not paced, held by producer');
  });

  it('is on the progress line and in the structured progress', () => {
    const stats = new RunStats();
    stats.pacing = () => held;
    expect(progressLine(stats, 200)).toContain('paced 114 req/min (learned), held by gateway rate');
    expect(progressFields(stats)).toMatchObject({
      pacing: { limitedBy: 'gateway rate', requestsPerMinute: 113, paced: { requests: 114 } },
    });
  });

  it('is exported to /metrics at each scrape', async () => {
    const metrics = new WorkerMetrics();
    let now = held;
    metrics.pacing(() => now);
    const text = async () => metrics.registry.metrics();
    expect(await text()).toContain('embedpipe_rate_paced_per_minute{dimension="requests"} 114');
    expect(await text()).toContain('embedpipe_limited_by{by="gateway rate"} 1');
    now = windowFull;
    const later = await text();
    expect(later).toContain('embedpipe_limited_by{by="in-flight window"} 1');
    expect(later).toContain('embedpipe_limited_by{by="gateway rate"} 0');
    expect(later).not.toContain('embedpipe_rate_paced_per_minute{');
    expect(later).toContain('embedpipe_rate_measured_per_minute{dimension="tokens"} 70000');
  });
});
