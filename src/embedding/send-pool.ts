/**
 * The few texts a batch still has to send after reuse, sent together with other batches' few.
 *
 * An incremental run reuses most of every batch, and each batch past the first change held one or
 * two new texts: each went in a request of its own, about a request per new text on a nightly run
 * (docs/benchmarks.md, "a fifth session"). Batches keep their ids, so the plan, the commits and the
 * next night's carried batches are what they were; only the requests are shared.
 *
 * A group waits `waitMs` for more members, or goes when it is full (inputs or summed tokens). Its
 * first member is the host: the request goes out as the host's batch, so whatever the embedder
 * decides per batch (a document re-planned because a chunk was too long, the refusal storm) is
 * decided for the host, which then holds those rows, as when a batch re-plans a document another
 * batch had planned. The answer is split back by chunk: each member gets its own rows, failures,
 * and part of the tokens and cost; the host also gets the request itself and the re-planned rows
 * (the ledger's sums stay the gateway's). A failed request fails every member: each is left for a
 * re-run, as a batch is.
 */
import { concatenated } from '../concatenated.js';
import { DEFAULTS } from '../config/defaults.js';
import type { Batch, Chunk, ChunkFailure, EmbeddedBatch } from '../domain.js';
import { BatchFailedError, type GatewayEmbedder } from './gateway-embedder.js';

export interface SendPoolLimits {
  /** Inputs per request. */
  readonly maxInputs: number;
  /** Summed estimated tokens per request. */
  readonly maxTokens: number;
  /** How long a group waits for more members before its request goes. */
  readonly waitMs: number;
}

/** A run's limits: its request caps, and the wait from DEFAULTS. */
export function sendPoolLimits(settings: {
  readonly maxInputs: number;
  readonly maxTokensPerRequest: number;
}): SendPoolLimits {
  return {
    maxInputs: settings.maxInputs,
    maxTokens: settings.maxTokensPerRequest,
    waitMs: DEFAULTS.sendPoolWaitMs,
  };
}

interface Member {
  readonly batch: Batch;
  readonly chunks: readonly Chunk[];
  resolve(result: EmbeddedBatch): void;
  reject(error: unknown): void;
}

interface Group {
  readonly members: Member[];
  inputs: number;
  tokens: number;
  readonly signal: AbortSignal;
  timer?: NodeJS.Timeout;
}

/** Whether a batch of `planned` chunks with `chunks` left to send after reuse shares a request (see SendPool.shares). */
export function sharesRequest(planned: number, chunks: readonly Chunk[], maxInputs: number): boolean {
  return (
    chunks.length < planned &&
    chunks.length * 2 <= maxInputs &&
    chunks.every((chunk) => chunk.image === undefined)
  );
}

/** The chunks' summed token estimates: what a group counts against the token cap. */
function estimatedTokens(chunks: readonly Chunk[]): number {
  let sum = 0;
  for (const chunk of chunks) sum += chunk.tokens;
  return sum;
}

/** Whether a group's request would go over a cap with `inputs` more inputs of `tokens` tokens. */
function overflows(
  group: { readonly inputs: number; readonly tokens: number },
  inputs: number,
  tokens: number,
  limits: Pick<SendPoolLimits, 'maxInputs' | 'maxTokens'>,
): boolean {
  return group.inputs + inputs > limits.maxInputs || group.tokens + tokens > limits.maxTokens;
}

/**
 * The requests a run would make of the batches a dry run counts, in plan order: a batch sent whole
 * is a request; the few texts of batches that share go in groups filled as SendPool fills them.
 * No group is sent early by its wait (batches are assumed to come together): an estimate, which a
 * slow corpus or gateway can exceed.
 */
export class RequestEstimate {
  readonly #limits: Pick<SendPoolLimits, 'maxInputs' | 'maxTokens'>;
  /** Requests that are complete: batches sent whole, and groups the next texts overflowed. */
  #sent = 0;
  #open = { inputs: 0, tokens: 0 };

  constructor(limits: Pick<SendPoolLimits, 'maxInputs' | 'maxTokens'>) {
    this.#limits = limits;
  }

  /** A batch of `planned` chunks that sends `chunks`. */
  add(planned: number, chunks: readonly Chunk[]): void {
    if (chunks.length === 0) return;
    if (!sharesRequest(planned, chunks, this.#limits.maxInputs)) {
      this.#sent += 1;
      return;
    }
    const tokens = estimatedTokens(chunks);
    // (A group the pool sends the moment it is full counts the same: the next texts overflow it.)
    if (this.#open.inputs > 0 && overflows(this.#open, chunks.length, tokens, this.#limits)) {
      this.#sent += 1;
      this.#open = { inputs: 0, tokens: 0 };
    }
    this.#open.inputs += chunks.length;
    this.#open.tokens += tokens;
  }

  get requests(): number {
    return this.#sent + (this.#open.inputs > 0 ? 1 : 0);
  }
}

export class SendPool {
  readonly #embedder: Pick<GatewayEmbedder, 'embedBatch'>;
  readonly #limits: SendPoolLimits;
  #open: Group | undefined;

  constructor(embedder: Pick<GatewayEmbedder, 'embedBatch'>, limits: SendPoolLimits) {
    this.#embedder = embedder;
    this.#limits = limits;
  }

  /**
   * Whether `chunks` (what `batch` has left to send) are few enough to share a request. Texts only:
   * a request's inputs are either strings or multimodal blocks, and images have their own byte cap.
   */
  shares(batch: Batch, chunks: readonly Chunk[]): boolean {
    return sharesRequest(batch.chunks.length, chunks, this.#limits.maxInputs);
  }

  /** Sends `chunks` of `batch`, with other batches' if they come soon; resolves with `batch`'s share. */
  send(batch: Batch, chunks: readonly Chunk[], signal: AbortSignal): Promise<EmbeddedBatch> {
    const tokens = estimatedTokens(chunks);
    const open = this.#open;
    if (open && overflows(open, chunks.length, tokens, this.#limits)) this.#flush(open);
    this.#open ??= { members: [], inputs: 0, tokens: 0, signal };
    const group = this.#open;
    const share = new Promise<EmbeddedBatch>((resolve, reject) => {
      group.members.push({ batch, chunks, resolve, reject });
    });
    group.inputs += chunks.length;
    group.tokens += tokens;
    if (group.inputs >= this.#limits.maxInputs) this.#flush(group);
    else group.timer ??= setTimeout(() => this.#flush(group), this.#limits.waitMs);
    return share;
  }

  #flush(group: Group): void {
    if (this.#open === group) this.#open = undefined;
    clearTimeout(group.timer);
    const [host] = group.members;
    const chunks = concatenated(group.members, (member) => member.chunks);
    this.#embedder.embedBatch({ ...host!.batch, chunks }, group.signal).then(
      (answer) => {
        const shares = splitAnswer(answer, group.members);
        group.members.forEach((member, i) => {
          member.resolve(shares[i]!);
        });
      },
      (error: unknown) => {
        // Each batch fails under its own id (the log and the failed-batch list name it, not the host).
        for (const member of group.members) {
          member.reject(
            error instanceof BatchFailedError
              ? new BatchFailedError(member.batch.batchId, error.cause)
              : error,
          );
        }
      },
    );
  }
}

/**
 * Each member's rows and failures, and its part of the request's tokens and cost, in proportion to
 * its texts' estimated tokens (what a batch record says it cost is about its own texts). The host
 * keeps the rest of the sums, the request and its retries, and the rows of re-planned documents.
 */
export function splitAnswer(answer: EmbeddedBatch, members: readonly Pick<Member, 'batch' | 'chunks'>[]) {
  const memberOf = new Map<Chunk, number>();
  const memberOfKey = new Map<string, number>();
  members.forEach((member, i) => {
    for (const chunk of member.chunks) {
      memberOf.set(chunk, i);
      memberOfKey.set(`${chunk.index}:${chunk.documentId}`, i);
    }
  });
  const usages = splitUsage(answer.usage, members);
  const shares = members.map((member, i) => ({
    ...answer,
    batchId: member.batch.batchId,
    chunks: [] as Chunk[],
    vectors: [] as Float32Array[],
    failures: [] as ChunkFailure[],
    usage: usages[i]!,
    ...(i === 0 ? {} : { replanned: [] }),
  }));
  answer.chunks.forEach((chunk, row) => {
    const share = shares[memberOf.get(chunk) ?? 0]!;
    share.chunks.push(chunk);
    share.vectors.push(answer.vectors[row]!);
  });
  for (const failure of answer.failures) {
    const share = shares[memberOfKey.get(`${failure.chunkIndex}:${failure.documentId}`) ?? 0]!;
    share.failures.push({ ...failure, batchId: share.batchId });
  }
  return shares;
}

function splitUsage(
  usage: EmbeddedBatch['usage'],
  members: readonly Pick<Member, 'chunks'>[],
): EmbeddedBatch['usage'][] {
  const estimates = members.map((member) => estimatedTokens(member.chunks));
  const total = estimates.reduce((sum, tokens) => sum + tokens, 0);
  const guests = estimates.slice(1).map((tokens) => {
    const part = total > 0 ? tokens / total : 0;
    return {
      promptTokens: Math.floor(usage.promptTokens * part),
      cost: usage.cost * part,
      requests: 0,
      retries: 0,
    };
  });
  const host = {
    promptTokens: usage.promptTokens - guests.reduce((sum, guest) => sum + guest.promptTokens, 0),
    cost: usage.cost - guests.reduce((sum, guest) => sum + guest.cost, 0),
    requests: usage.requests,
    retries: usage.retries,
  };
  return [host, ...guests];
}
