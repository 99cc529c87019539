import type { EncodingFormat } from '../gateway/wire.js';
import type { Outcome, RequestContext } from './context.js';
import { parseEmbeddingsRequest, renderEmbeddings } from './embeddings.js';
import { admit, pause } from './gate.js';
import { parseJson } from './http.js';
import type { Account } from './keys.js';
import type { FaultKind } from './options.js';
import { chooseProvider } from './providers.js';
import type { EmulatorState } from './state.js';
import { parseTranscriptionRequest, renderTranscription, transcriptionCost } from './transcription.js';

/*
 * The inference routes. Each checks its body (400) and model (404), takes its rate windows (429),
 * routes to a provider, draws its fault, charges (402) and answers, in that order: so faults only
 * hit requests that would have reached a provider, and nothing faulted is charged.
 */

export async function embeddings(context: RequestContext): Promise<Outcome> {
  const { state, record } = context;
  const account = accountOf(context);
  const job = parseEmbeddingsRequest(parseJson(context.text), state.models);
  record.model = job.model.id;
  record.inputs = job.inputs.length;
  record.tokens = job.tokens;
  record.images = job.inputs.reduce((sum, input) => sum + (input.images ?? 0), 0);
  record.encoding = job.format;
  admit(account, job.tokens);
  const provider = chooseProvider(job.model.id, job.model.providers, job.provider, state.routing);
  record.provider = provider;

  const fault = await injectFault(context, provider);
  if (fault === 'reset') return 'reset';
  const encoding = deliveredEncoding(job.format, fault, state);
  const cost = encoding === 'none' ? 0 : job.tokens * Number(job.model.pricePerToken);
  account.charge(cost);
  if (encoding !== 'none') {
    const delivered = { inputs: job.inputs.length, tokens: job.tokens, truncated: job.truncated };
    state.recorder.served(account.label, provider, delivered, cost);
  }
  const body = renderEmbeddings(job, {
    id: state.nextResponseId(),
    provider,
    encoding,
    cost,
    shuffle: state.shuffle,
    omitIndex: state.options.omitIndex ?? false,
  });
  return { status: 200, body };
}

/** The encoding the answer really carries: as asked, or none/floats from a broken provider. */
function deliveredEncoding(
  asked: EncodingFormat,
  fault: 'empty' | undefined,
  state: EmulatorState,
): EncodingFormat | 'none' {
  if (fault === 'empty') return 'none';
  if (asked !== 'base64') return asked;
  const mode = state.options.base64Mode ?? 'normal';
  return mode === 'empty' ? 'none' : mode === 'floats' ? 'float' : 'base64';
}

export async function transcriptions(context: RequestContext): Promise<Outcome> {
  const { state, record } = context;
  const account = accountOf(context);
  const job = parseTranscriptionRequest(parseJson(context.text), state.models);
  record.model = job.model.id;
  record.inputs = 1;
  // Audio has no prompt tokens: only the requests window applies.
  admit(account, 0);
  const provider = chooseProvider(job.model.id, job.model.providers, job.provider, state.routing);
  record.provider = provider;

  const fault = await injectFault(context, provider);
  if (fault === 'reset') return 'reset';
  if (fault === 'empty') return { status: 200, body: { text: '' } };
  const cost = transcriptionCost(job);
  account.charge(cost);
  state.recorder.served(account.label, provider, { inputs: 1, tokens: 0, truncated: 0 }, cost);
  return { status: 200, body: renderTranscription(job, cost) };
}

function accountOf(context: RequestContext): Account {
  if (context.credential.kind !== 'api') throw new Error('inference routes are for ordinary keys');
  return context.credential.account;
}

/**
 * Draws the request's fault, after routing (so it can name the provider) and before any charge.
 * Error faults throw; 'slow' waits and lets the request succeed; 'reset' and 'empty' are returned.
 */
async function injectFault(
  context: RequestContext,
  provider: string,
): Promise<'reset' | 'empty' | undefined> {
  const { state, path, record } = context;
  if (!state.faults.covers(path)) return undefined;
  const kind: FaultKind | undefined = state.faults.next();
  if (kind === undefined) return undefined;
  record.fault = kind;
  state.recorder.fault(kind);
  const error = state.faults.error(kind, provider);
  if (error) throw error;
  if (kind === 'slow') {
    await pause(state.faults.slowMs, context.signal);
    return undefined;
  }
  return kind === 'reset' || kind === 'empty' ? kind : undefined;
}
