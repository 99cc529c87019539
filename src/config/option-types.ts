/**
 * Types derived from the options table: the parsed flags of each command, the job file, and the
 * value an option resolves to. Types only: nothing here exists at run time.
 */
import type { CommandName, OPTIONS, OptionName, OptionType } from './options-table.js';

type Table = typeof OPTIONS;
type TypeOf<K extends OptionName> = Table[K]['type'];

/** What commander hands over for a flag: enums and text as given, numbers parsed. */
type FlagValue<T extends OptionType> = T extends { kind: 'int' | 'number' }
  ? number
  : T extends { kind: 'switch' }
    ? boolean
    : string;

/** An option's value once read: from a flag, the job file, the environment or the default. */
type ValueOf<T extends OptionType> = T extends { kind: 'int' | 'number' }
  ? number
  : T extends { kind: 'switch' }
    ? boolean
    : T extends { kind: 'enum'; choices: readonly (infer C)[] }
      ? C
      : T extends { kind: 'list' }
        ? string[]
        : T extends { kind: 'provider-options' }
          ? Record<string, Record<string, unknown>>
          : string;

export type OptionValue<K extends OptionName> = ValueOf<TypeOf<K>>;

/** The value `get` resolves to: never undefined when the table has a default. */
export type Resolved<K extends OptionName> =
  | OptionValue<K>
  | (Table[K] extends { readonly default: unknown } ? never : undefined);

/** The parsed flags of `command` (commander's camelCase names). */
export type FlagsOf<C extends CommandName> = {
  -readonly [K in OptionName as Table[K] extends {
    readonly flag: string;
    readonly commands: readonly (infer A)[];
  }
    ? C extends A
      ? K
      : never
    : never]?: FlagValue<TypeOf<K>>;
};

/** What `embedpipe run` (and so `enqueue`, which resolves the same settings) flags can set. */
export type RunFlags = FlagsOf<'run'>;
export type WorkerFlags = FlagsOf<'worker'>;
/** Where the queue lives: the options every distributed command shares (`resume` takes only those). */
export type QueueFlags = FlagsOf<'resume'>;

// The job file: each option's `job` path, nested one level ('batching.maxInputs').
type JobKey = { [K in OptionName]: Table[K] extends { readonly job: string } ? K : never }[OptionName];
type JobPath<K extends JobKey> = Table[K]['job'];
type IsRequired<K extends JobKey> = Table[K] extends { readonly required: true } ? true : false;
type Leaf<K extends JobKey, Prefix extends string> =
  JobPath<K> extends `${Prefix}${infer Rest}` ? Rest : never;
type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** The fields of the options in `Keys`, named by their path less `Prefix`. */
type Fields<Keys extends JobKey, Prefix extends string> = Simplify<
  { -readonly [K in Keys as IsRequired<K> extends true ? Leaf<K, Prefix> : never]: OptionValue<K> } & {
    -readonly [K in Keys as IsRequired<K> extends true ? never : Leaf<K, Prefix>]?: OptionValue<K>;
  }
>;

type TopKey = { [K in JobKey]: JobPath<K> extends `${string}.${string}` ? never : K }[JobKey];
type GroupOf<K extends JobKey> = JobPath<K> extends `${infer G}.${string}` ? G : never;
type Group = { [K in JobKey]: GroupOf<K> }[JobKey];
type RequiredGroup = { [K in JobKey]: IsRequired<K> extends true ? GroupOf<K> : never }[JobKey];
type InGroup<G extends string> = { [K in JobKey]: GroupOf<K> extends G ? K : never }[JobKey];

/** A parsed job file (jobs/*.json): what job.ts's zod schema, built from the same table, accepts. */
export type JobFile = Simplify<
  { $schema?: string; description?: string } & Fields<TopKey, ''> & {
      -readonly [G in RequiredGroup]: Fields<InGroup<G>, `${G}.`>;
    } & { -readonly [G in Exclude<Group, RequiredGroup>]?: Fields<InGroup<G>, `${G}.`> }
>;
