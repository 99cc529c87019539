import { register as globalRegistry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { type MetricsServer, startMetricsServer, WorkerMetrics } from '../../src/observability/metrics.js';

/** Prometheus text format: `name{labels} value` lines → value, keyed by `name{labels}`. */
function parseMetrics(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return samples;
}

const servers: MetricsServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(metrics: WorkerMetrics): Promise<string> {
  const server = await startMetricsServer({ port: 0, host: '127.0.0.1', metrics });
  servers.push(server);
  expect(server.port).toBeGreaterThan(0);
  return `http://127.0.0.1:${server.port}`;
}

describe('WorkerMetrics over HTTP', () => {
  it('serves what the worker recorded, in the Prometheus text format', async () => {
    const metrics = new WorkerMetrics();
    const base = await serve(metrics);

    metrics.jobCompleted({ inputs: 16, tokens: 1_200, costUsd: 0.0012 });
    metrics.jobCompleted({ inputs: 4, tokens: 300, costUsd: 0.0003 });
    metrics.jobRetried();
    metrics.jobFailed();
    metrics.retry();
    metrics.retry();
    metrics.rateLimited();
    metrics.observeRequest(0.03);
    metrics.observeRequest(1.7);
    metrics.observeRequest(90);
    metrics.active(3);

    const response = await fetch(`${base}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const samples = parseMetrics(await response.text());

    expect(samples.get('embedpipe_jobs_total{status="completed"}')).toBe(2);
    expect(samples.get('embedpipe_jobs_total{status="failed"}')).toBe(1);
    expect(samples.get('embedpipe_jobs_total{status="retried"}')).toBe(1);
    expect(samples.get('embedpipe_inputs_total')).toBe(20);
    expect(samples.get('embedpipe_tokens_total')).toBe(1_500);
    expect(samples.get('embedpipe_cost_usd_total')).toBeCloseTo(0.0015, 10);
    expect(samples.get('embedpipe_http_retries_total')).toBe(2);
    expect(samples.get('embedpipe_rate_limited_total')).toBe(1);
    expect(samples.get('embedpipe_jobs_active')).toBe(3);

    // Cumulative buckets from 20 ms to 120 s.
    const bucket = (le: string) => samples.get(`embedpipe_request_duration_seconds_bucket{le="${le}"}`);
    expect(bucket('0.02')).toBe(0);
    expect(bucket('0.05')).toBe(1);
    expect(bucket('2.5')).toBe(2);
    expect(bucket('60')).toBe(2);
    expect(bucket('120')).toBe(3);
    expect(bucket('+Inf')).toBe(3);
    expect(samples.get('embedpipe_request_duration_seconds_count')).toBe(3);
    expect(samples.get('embedpipe_request_duration_seconds_sum')).toBeCloseTo(91.73, 6);

    // prom-client's default process metrics, on the same registry.
    expect(samples.get('process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(samples.get('nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
  });

  it('shows every job status from the start, at 0', async () => {
    const samples = parseMetrics(await new WorkerMetrics().registry.metrics());
    for (const status of ['completed', 'failed', 'retried']) {
      expect(samples.get(`embedpipe_jobs_total{status="${status}"}`)).toBe(0);
    }
  });

  it('keeps each instance on its own registry, off the global one', async () => {
    const a = new WorkerMetrics();
    const b = new WorkerMetrics();
    a.rateLimited();
    expect(parseMetrics(await b.registry.metrics()).get('embedpipe_rate_limited_total')).toBe(0);
    expect(globalRegistry.getSingleMetric('embedpipe_rate_limited_total')).toBeUndefined();
  });

  it('answers 404 elsewhere and 405 to other methods', async () => {
    const base = await serve(new WorkerMetrics());
    expect((await fetch(`${base}/`)).status).toBe(404);
    expect((await fetch(`${base}/metrics/extra`)).status).toBe(404);
    expect((await fetch(`${base}/metrics?name[]=x`)).status).toBe(200);
    const post = await fetch(`${base}/metrics`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('closes promptly although the scraper keeps its connection alive', async () => {
    const server = await startMetricsServer({ port: 0, host: '127.0.0.1', metrics: new WorkerMetrics() });
    await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
    const start = performance.now();
    await server.close();
    expect(performance.now() - start).toBeLessThan(500);
    await expect(fetch(`http://127.0.0.1:${server.port}/metrics`)).rejects.toThrow();
  });
});
