/**
 * Commander options from the options table (src/config/options-table.ts): flag, parser, help. Every
 * command declares its options through addTableOptions, so every default its help shows is the
 * table's.
 */
import { type Command, Option } from 'commander';
import {
  type CommandName,
  describeOption,
  type FlagSpec,
  type OptionType,
  type OwnOptionSpec,
  optionEntries,
  ownOptionEntries,
} from '../config/options-table.js';
import { integerOption, numberOption } from './options.js';

/** Commander's parser for a value of this type; enums and the rest are checked by the resolver or the action. */
function parserFor(type: OptionType): ((value: string) => number) | undefined {
  if (type.kind === 'int') return integerOption(type.min, type.max);
  if (type.kind === 'number') return numberOption(type.min, type.max);
  return undefined;
}

/** The commander options of `spec` (two for a switch that can be negated). */
export function commanderOptions(spec: FlagSpec & Pick<Partial<OwnOptionSpec>, 'mandatory'>): Option[] {
  if (spec.flag === undefined) return [];
  const option = new Option(spec.flag, describeOption(spec));
  const parse = parserFor(spec.type);
  if (parse) option.argParser(parse);
  if (spec.mandatory) option.makeOptionMandatory();
  if (spec.type.kind === 'switch' && spec.type.negatedHelp !== undefined) {
    return [option, new Option(`--no-${spec.flag.slice(2)}`, spec.type.negatedHelp)];
  }
  return [option];
}

/**
 * Adds every option `name` takes: those of OPTIONS it accepts, in the table's order, then those it
 * declares for itself (OWN_OPTIONS).
 */
export function addTableOptions(command: Command, name: CommandName): Command {
  const specs: FlagSpec[] = [
    ...optionEntries()
      .filter(([, spec]) => spec.commands.includes(name))
      .map(([, spec]) => spec),
    ...ownOptionEntries(name).map(([, spec]) => spec),
  ];
  for (const spec of specs) for (const option of commanderOptions(spec)) command.addOption(option);
  return command;
}
