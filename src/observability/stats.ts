import type { Pacing } from '../domain.js';
import type { WholeRead } from '../files/whole-read.js';
import { Ledger } from './ledger.js';

/**
 * What a run is doing now, for the progress line and the summary: the planner's and the
 * gateway's live counters. What the dataset holds is not counted here: `ledger` folds it from the
 * committed batch records. Plain numbers: cheap to bump on the hot path.
 */
export class RunStats {
  readonly startedAt = Date.now();
  /** The batches committed (this run's and earlier runs' of the same plan), and those that failed. */
  readonly ledger = new Ledger();
  documents = 0;
  rejects = 0;
  chunks = 0;
  tokens = 0;
  /** Estimated tokens of the chunks reused or deduplicated: what was not paid for again. */
  tokensReused = 0;
  requests = 0;
  /** When the first embeddings request went out (ms since the epoch), for throughput figures. */
  firstRequestAt: number | undefined;
  /** When the last batch was committed, before finalizing (compaction, manifest). */
  embeddingEndedAt: number | undefined;
  /** The input file's sha256 and size, as planning read it to its end (CorpusStats.wholeRead). */
  inputRead: WholeRead | undefined;
  retries = 0;
  /** Tokens the gateway reported (usage.prompt_tokens), for this run's requests only (probes too). */
  gatewayTokens = 0;
  /**
   * What this run spent: the cost the gateway reported (usage.cost, or estimated from pricing) of
   * every answer, the calibration probes' and batches' that failed later included.
   */
  cost = 0;
  bytesRead = 0;
  bytesTotal = 0;
  /** True once the corpus has been read to its end (the batch total is then final). */
  planningDone = false;
  /** Answers that asked to wait (Retry-After), 429s and 503s. */
  retryAfterAnswers = 0;
  /** Until when (ms since the epoch) the gateway asked the run to wait; past: not waiting. */
  waitingUntil: number | undefined;
  /** The wait is longer than --max-retry-after: requests fail (left for a re-run) instead of waiting. */
  waitPastCap = false;
  /** Requests allowed on the wire now (the adaptive window), when the client caps them. */
  window: number | undefined;
  /** The gateway client's pacing, read when progress is shown (set by the command that made it). */
  pacing: (() => Pacing) | undefined;
  /** Audio corpora: transcription, counted apart from the embeddings above. */
  readonly audio = {
    /** Audio documents read (audio files that were rejects are in `rejects`). */
    files: 0,
    /** Transcripts the gateway made for this run. */
    transcribed: 0,
    /** Transcripts the dataset held (or this run already had): not paid again. */
    reused: 0,
    /** Files whose retries ran out (left for a re-run). */
    failed: 0,
    /** Transcriptions on the wire now. */
    inFlight: 0,
    /** Transcription requests and retries. */
    requests: 0,
    retries: 0,
    /** Seconds of audio transcribed by this run (as the gateway reported them). */
    seconds: 0,
    /** USD this run's transcriptions cost (usage.cost, else estimated). */
    cost: 0,
  };

  elapsedMs(now = Date.now()): number {
    return now - this.startedAt;
  }
}
