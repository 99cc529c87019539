export {
  type CallOptions,
  type EmbeddingsRequest,
  GatewayClient,
  type GatewayClientOptions,
  type MembersQuery,
  type RetryAfterEvent,
  retryAfterTooLong,
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
  redact,
  ServiceUnavailableError,
} from './errors.js';
export { type RetryingGateway, retrying } from './retrying.js';
export type * from './wire.js';
export { MEMBERS_LIMIT_DEFAULT, MEMBERS_LIMIT_MAX, MEMBERS_LIMIT_MIN } from './wire.js';
