/**
 * A worker's Prometheus metrics and the HTTP endpoint that serves them. Each WorkerMetrics owns its
 * Registry (never prom-client's global one), so two in one process (tests, a library user) never
 * clash over a metric name; prom-client's default process metrics go on the same registry.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Pacing } from '../domain.js';
import { HOLDERS, readPacing } from './pacing.js';

/** From a quick small batch (20 ms) to a slow provider at the request deadline (120 s). */
const REQUEST_DURATION_BUCKETS: readonly number[] = [
  0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120,
];

export type JobStatus = 'completed' | 'failed' | 'retried';

/** What one completed job did, from its batch record. */
export interface JobUsage {
  inputs: number;
  tokens: number;
  costUsd: number;
}

export class WorkerMetrics {
  readonly registry = new Registry();
  readonly #jobs: Counter<'status'>;
  readonly #inputs: Counter;
  readonly #tokens: Counter;
  readonly #cost: Counter;
  readonly #httpRetries: Counter;
  readonly #rateLimited: Counter;
  readonly #requestDuration: Histogram;
  readonly #active: Gauge;

  constructor() {
    const registers = [this.registry];
    this.#jobs = new Counter({
      name: 'embedpipe_jobs_total',
      help: 'Jobs (batches) finished by this worker, by outcome',
      labelNames: ['status'],
      registers,
    });
    // Every status from the start, at 0: a rate() over a series that appears late misses its first step.
    for (const status of ['completed', 'failed', 'retried'] satisfies JobStatus[])
      this.#jobs.inc({ status }, 0);
    this.#inputs = new Counter({
      name: 'embedpipe_inputs_total',
      help: 'Inputs (chunks) embedded',
      registers,
    });
    this.#tokens = new Counter({
      name: 'embedpipe_tokens_total',
      help: 'Tokens the gateway counted (usage.prompt_tokens)',
      registers,
    });
    this.#cost = new Counter({
      name: 'embedpipe_cost_usd_total',
      help: 'Cost in USD, as the gateway reported it (or estimated from pricing)',
      registers,
    });
    this.#httpRetries = new Counter({
      name: 'embedpipe_http_retries_total',
      help: 'HTTP requests sent again after a retryable answer or a network error',
      registers,
    });
    this.#rateLimited = new Counter({
      name: 'embedpipe_rate_limited_total',
      help: 'Answers with status 429',
      registers,
    });
    this.#requestDuration = new Histogram({
      name: 'embedpipe_request_duration_seconds',
      help: 'Duration of one embeddings request, from sending to the last body byte',
      buckets: [...REQUEST_DURATION_BUCKETS],
      registers,
    });
    this.#active = new Gauge({
      name: 'embedpipe_jobs_active',
      help: 'Jobs this worker is processing now',
      registers,
    });
    collectDefaultMetrics({ register: this.registry });
  }

  jobCompleted({ inputs, tokens, costUsd }: JobUsage): void {
    this.#jobs.inc({ status: 'completed' });
    this.#inputs.inc(inputs);
    this.#tokens.inc(tokens);
    this.#cost.inc(costUsd);
  }

  /** A job failed for good (attempts used up, or unrecoverable). */
  jobFailed(): void {
    this.#jobs.inc({ status: 'failed' });
  }

  /** A job attempt failed and the queue will run it again. */
  jobRetried(): void {
    this.#jobs.inc({ status: 'retried' });
  }

  /** One HTTP retry inside a job. */
  retry(): void {
    this.#httpRetries.inc();
  }

  /** One 429 answer. */
  rateLimited(): void {
    this.#rateLimited.inc();
  }

  observeRequest(seconds: number): void {
    this.#requestDuration.observe(seconds);
  }

  /**
   * The client's pacing, read at each scrape: the rates paced to and measured (per minute, by
   * dimension), and what holds requests back (1 for the holder, 0 for the others).
   */
  pacing(read: () => Pacing): void {
    const registers = [this.registry];
    const reading = () => readPacing(read());
    new Gauge({
      name: 'embedpipe_rate_paced_per_minute',
      help: 'The rate the budget paces requests to (gateway limit x pace), by dimension; absent: not paced',
      labelNames: ['dimension'],
      registers,
      collect() {
        this.reset();
        for (const [dimension, value] of Object.entries(reading().paced)) this.set({ dimension }, value);
      },
    });
    new Gauge({
      name: 'embedpipe_rate_measured_per_minute',
      help: 'Successful requests and billed tokens per minute over the last minute, by dimension',
      labelNames: ['dimension'],
      registers,
      collect() {
        const r = reading();
        this.set({ dimension: 'requests' }, r.requestsPerMinute);
        this.set({ dimension: 'tokens' }, r.tokensPerMinute);
      },
    });
    new Gauge({
      name: 'embedpipe_limited_by',
      help: 'What holds requests back now: the gateway rate, the in-flight window, or the producer (1 for the holder)',
      labelNames: ['by'],
      registers,
      collect() {
        const holder = reading().limitedBy;
        for (const by of HOLDERS) this.set({ by }, by === holder ? 1 : 0);
      },
    });
  }

  /** Jobs in progress now. */
  active(n: number): void {
    this.#active.set(n);
  }
}

export interface MetricsServerOptions {
  /** 0 picks a free port. */
  port: number;
  /** Address to bind (default 0.0.0.0, so a scraper in another container reaches it). */
  host?: string;
  metrics: WorkerMetrics;
}

export interface MetricsServer {
  /** The port it listens on (the one picked when asked for 0). */
  readonly port: number;
  close(): Promise<void>;
}

/** Serves `GET /metrics` in Prometheus's text format; 404 for any other path. */
export async function startMetricsServer({
  port,
  host = '0.0.0.0',
  metrics,
}: MetricsServerOptions): Promise<MetricsServer> {
  const { registry } = metrics;
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://metrics').pathname;
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end();
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (error: unknown) =>
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`${String(error)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        // Since Node 19 this also drops idle keep-alive connections: a scraper's does not hold it open.
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
