/**
 * JSON shapes on the wire, shared by the client (gateway/) and the emulator (emulator/).
 * Names follow the spec (../shared/spec) and the published gateway where the spec leaves them open.
 */

// ---- embeddings ---------------------------------------------------------------------------------

export interface TextPart {
  type: 'text';
  text: string;
}
export interface ImageUrlPart {
  type: 'image_url';
  image_url: { url: string };
}
export type ContentPart = TextPart | ImageUrlPart;
/** One multimodal input: its parts yield one joint embedding. */
export interface MultimodalBlock {
  content: ContentPart[];
}
export type EmbeddingInput = string | string[] | MultimodalBlock[];

export type EncodingFormat = 'float' | 'base64';

/** Routing preferences (spec 4.3). */
export interface ProviderPreferences {
  order?: string[];
  allow_fallbacks?: boolean;
  data_collection?: 'allow' | 'deny';
  /** Provider passthrough configuration, keyed by provider name (published gateway: provider.options.<name>). */
  options?: Record<string, Record<string, unknown>>;
}

export interface EmbeddingsRequestBody {
  model: string;
  input: EmbeddingInput;
  encoding_format?: EncodingFormat;
  provider?: ProviderPreferences;
}

export interface EmbeddingItemWire {
  object?: 'embedding';
  /** float array, or base64 of little-endian float32 (whatever was asked: clients accept both). */
  embedding: number[] | string;
  index?: number;
}

export interface UsageWire {
  prompt_tokens?: number;
  total_tokens?: number;
  cost?: number;
}

export interface EmbeddingsResponseWire {
  object?: 'list';
  id?: string;
  model?: string;
  provider?: string;
  data: EmbeddingItemWire[];
  usage?: UsageWire;
}

// ---- models -------------------------------------------------------------------------------------

export interface EmbeddingModelWire {
  id: string;
  context_length?: number | null;
  name?: string;
  /** Published gateway: USD per token, as decimal strings. */
  pricing?: { prompt?: string; completion?: string; image?: string; request?: string };
  architecture?: { input_modalities?: string[]; output_modalities?: string[] };
  [extra: string]: unknown;
}

export interface EmbeddingModelsResponseWire {
  data: EmbeddingModelWire[];
}

// ---- transcription ------------------------------------------------------------------------------

export interface TranscriptionRequestBody {
  model: string;
  input_audio: { data: string; format: string };
  language?: string;
  /** Published gateway: a top-level `temperature`. */
  temperature?: number;
  /** Published gateway: passthrough lives under `provider.options.<provider>`. */
  provider?: ProviderPreferences;
}

export interface TranscriptionResponseWire {
  text: string;
  usage?: {
    cost?: number;
    input_tokens?: number;
    output_tokens?: number;
    seconds?: number;
    total_tokens?: number;
  };
}

// ---- members ------------------------------------------------------------------------------------

export type MemberRole = 'org:admin' | 'org:member';

export interface MemberWire {
  id: string;
  first_name: string | null;
  last_name: string | null;
  email: string;
  role: MemberRole;
}

export interface MembersResponseWire {
  data: MemberWire[];
  total_count: number;
}

// ---- errors -------------------------------------------------------------------------------------

export interface ErrorEnvelopeWire {
  error: {
    code: number;
    message: string;
    metadata?: { provider_name?: string; raw?: unknown; [k: string]: unknown } | null;
  };
  service_metadata?: Record<string, unknown> | null;
  user_id?: string | null;
}

/** Members page-size bounds (spec 8). */
export const MEMBERS_LIMIT_MIN = 1;
export const MEMBERS_LIMIT_MAX = 100;
/** Published gateway's default page size when `limit` is omitted. */
export const MEMBERS_LIMIT_DEFAULT = 50;
