import type { MemberWire } from '../gateway/wire.js';
import { FaultInjector } from './faults.js';
import { DEFAULT_KEYS, EMULATOR_MANAGEMENT_KEY, KeyRing } from './keys.js';
import { DEFAULT_MEMBER_COUNT, generateMembers } from './members.js';
import { DEFAULT_EMBEDDING_MODELS, DEFAULT_TRANSCRIPTION_MODELS, ModelCatalog } from './models.js';
import type { EmulatorOptions } from './options.js';
import { Sfc32 } from './prng.js';
import { DEFAULT_PROVIDERS, type Routing } from './providers.js';
import { Recorder } from './stats.js';

/** Everything one emulator remembers between requests; reset() builds a fresh one. */
export interface EmulatorState {
  readonly options: EmulatorOptions;
  readonly models: ModelCatalog;
  readonly routing: Routing;
  readonly keys: KeyRing;
  readonly faults: FaultInjector;
  readonly recorder: Recorder;
  readonly members: readonly MemberWire[];
  /** Draws the order of shuffled responses (shuffleData), reproducibly. */
  readonly shuffle: Sfc32 | undefined;
  nextResponseId(): string;
}

/** Options are already validated (config.ts); this fills in the defaults. */
export function createState(options: EmulatorOptions): EmulatorState {
  let responses = 0;
  return {
    options,
    models: new ModelCatalog(
      options.models ?? DEFAULT_EMBEDDING_MODELS,
      options.transcriptionModels ?? DEFAULT_TRANSCRIPTION_MODELS,
    ),
    routing: {
      providers: new Map((options.providers ?? DEFAULT_PROVIDERS).map((p) => [p.name, p])),
      overloaded: new Set(options.overloadedProviders ?? []),
    },
    keys: new KeyRing(options.keys ?? DEFAULT_KEYS, options.managementKeys ?? [EMULATOR_MANAGEMENT_KEY]),
    faults: new FaultInjector(options.faults),
    recorder: new Recorder(options.recordRequests ?? true),
    members: generateMembers(options.members ?? DEFAULT_MEMBER_COUNT),
    shuffle: options.shuffleData ? Sfc32.fromLabel(`shuffle:${options.faults?.seed ?? 1}`) : undefined,
    nextResponseId: () => `emb-emu-${String(++responses).padStart(8, '0')}`,
  };
}
