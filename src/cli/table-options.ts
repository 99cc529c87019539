/** Commander options from the options table (src/config/options-table.ts): flag, parser, help. */
import { type Command, Option } from 'commander';
import {
  type CommandName,
  describeOption,
  type OptionSpec,
  type OptionType,
  optionEntries,
} from '../config/options-table.js';
import { integerOption, numberOption } from './options.js';

/** Commander's parser for a value of this type; enums and the rest are checked by the resolver. */
function parserFor(type: OptionType): ((value: string) => number) | undefined {
  if (type.kind === 'int') return integerOption(type.min, type.max);
  if (type.kind === 'number') return numberOption(type.min, type.max);
  return undefined;
}

/** The commander options of `spec` (two for a switch that can be negated). */
export function commanderOptions(spec: OptionSpec): Option[] {
  if (spec.flag === undefined) return [];
  const option = new Option(spec.flag, describeOption(spec));
  const parse = parserFor(spec.type);
  if (parse) option.argParser(parse);
  if (spec.type.kind === 'switch' && spec.type.negatedHelp !== undefined) {
    return [option, new Option(`--no-${spec.flag.slice(2)}`, spec.type.negatedHelp)];
  }
  return [option];
}

/** Adds every option of the table that `name` accepts, in the table's order. */
export function addTableOptions(command: Command, name: CommandName): Command {
  for (const [, spec] of optionEntries()) {
    if (!spec.commands.includes(name)) continue;
    for (const option of commanderOptions(spec)) command.addOption(option);
  }
  return command;
}
