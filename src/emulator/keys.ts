import { HttpError } from './http.js';
import type { KeyConfig } from './options.js';
import { KeyLimiter } from './ratelimit.js';

export const EMULATOR_API_KEY = 'emu-test-key';
export const EMULATOR_MANAGEMENT_KEY = 'emu-mgmt-key';

export const DEFAULT_KEYS: readonly KeyConfig[] = [{ key: EMULATOR_API_KEY, name: 'default' }];

/** Tolerance for float noise when comparing a cost with what is left. */
const CREDIT_EPSILON_USD = 1e-12;

/** An ordinary API key's account: its credit, its spend and its limits. */
export class Account {
  spent = 0;
  readonly limiter: KeyLimiter;

  constructor(
    readonly label: string,
    /** USD; Infinity when unlimited. */
    readonly credits: number,
    config: KeyConfig,
  ) {
    this.limiter = new KeyLimiter(config.limits);
  }

  get remaining(): number {
    return this.credits - this.spent;
  }

  /** Charges `cost`, or answers 402 charging nothing. */
  charge(cost: number): void {
    if (cost > this.remaining + CREDIT_EPSILON_USD) {
      throw new HttpError(
        402,
        `Insufficient credits: this request costs $${cost.toFixed(8)} and the key has $${Math.max(0, this.remaining).toFixed(8)} left`,
      );
    }
    this.spent += cost;
  }
}

/** Who a request may come from: inference endpoints, management endpoints, or either. */
export type Access = 'inference' | 'management' | 'any';

export type Credential =
  | { kind: 'api'; label: string; account: Account }
  | { kind: 'management'; label: string };

/** The emulator's keys. Records and stats name keys by label; the raw key never leaves this class. */
export class KeyRing {
  private readonly byKey = new Map<string, Credential>();

  constructor(keys: readonly KeyConfig[], managementKeys: readonly string[]) {
    keys.forEach((config, i) => {
      const label = config.name ?? `key${i}`;
      this.byKey.set(config.key, {
        kind: 'api',
        label,
        account: new Account(label, config.credits ?? Infinity, config),
      });
    });
    managementKeys.forEach((key, i) => {
      this.byKey.set(key, { kind: 'management', label: `mgmt${i}` });
    });
  }

  accounts(): Account[] {
    return [...this.byKey.values()].flatMap((c) => (c.kind === 'api' ? [c.account] : []));
  }

  label(rawKey: string): string | undefined {
    return this.byKey.get(rawKey)?.label;
  }

  /** Checks the Authorization header (spec 5) against what the endpoint needs; 401 says what is wrong. */
  authorize(header: string | undefined, access: Access): Credential {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (!match?.[1]) throw new HttpError(401, "Missing credentials: send 'Authorization: Bearer <API key>'");
    const credential = this.byKey.get(match[1]);
    if (!credential) throw new HttpError(401, 'Invalid API key');
    if (access === 'management' && credential.kind !== 'management') {
      throw new HttpError(
        401,
        'A management key is required for this endpoint; ordinary API keys cannot call it',
      );
    }
    if (access === 'inference' && credential.kind !== 'api') {
      throw new HttpError(401, 'Management keys cannot call inference endpoints; use an ordinary API key');
    }
    return credential;
  }
}
