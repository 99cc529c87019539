export {
  type CallOptions,
  type EmbeddingsRequest,
  GatewayClient,
  type GatewayClientOptions,
  type MembersQuery,
  type Pacing,
  type TranscriptionRequest,
} from './client.js';
export {
  decodeBase64Float32,
  type EmbeddingModel,
  type EmbeddingsResult,
  type EmbeddingsUsage,
  type Member,
  type MembersPage,
  type ModelPricing,
  type TranscriptionResult,
  type TranscriptionUsage,
} from './decode.js';
export {
  AuthenticationError,
  BadGatewayError,
  BadRequestError,
  BaseUrlError,
  ConnectionError,
  connectionErrorFrom,
  GatewayError,
  type GatewayErrorDetails,
  GatewayTimeoutError,
  GatewayUnreachableError,
  gatewayErrorFromResponse,
  InsufficientCreditsError,
  InternalServerError,
  InvalidResponseError,
  invalidResponseError,
  isRetryableStatus,
  NotFoundError,
  ProviderOverloadedError,
  RateLimitError,
  RequestTimeoutError,
  type ResponseFacts,
  RetryAfterTooLongError,
  redact,
  ServiceUnavailableError,
} from './errors.js';
export { MemoryPaceStore, type PaceStore, RateBudget } from './rate-budget.js';
export { type PerMinute, type RateTuning, type RateView, scaledTuning } from './rate-pace.js';
export {
  type GateState,
  type RetryAfterEvent,
  RetryAfterGate,
  RetryAfterGates,
  type RetryAfterGatesOptions,
} from './retry-after-gate.js';
export {
  type GateKey,
  MemoryRetryAfterStore,
  type RetryAfterListener,
  type RetryAfterStore,
} from './retry-after-store.js';
export { type RetryingGateway, retrying } from './retrying.js';
export type * from './wire.js';
export { MEMBERS_LIMIT_DEFAULT, MEMBERS_LIMIT_MAX, MEMBERS_LIMIT_MIN } from './wire.js';
