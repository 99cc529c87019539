/**
 * The options reference of docs/commands.md, rendered from the options table: scripts/options-doc.mjs
 * writes it between the page's markers, and test/config/options-doc.test.ts fails when the committed
 * page differs from what this renders.
 */
import { defaultText, longFlag, type OptionSpec, type OptionType, optionEntries } from './options-table.js';

/** What a value may be, as the reference says it. */
function valueText(type: OptionType): string {
  switch (type.kind) {
    case 'int':
      return type.max === undefined ? `integer ≥ ${type.min}` : `integer, ${type.min} to ${type.max}`;
    case 'number':
      return `number, ${type.min} to ${type.max}`;
    case 'enum':
      return type.choices.map((choice) => `\`${choice}\``).join(', ');
    case 'switch':
      return 'switch';
    case 'list':
      return 'comma-separated (job file: an array)';
    case 'provider-options':
      return 'JSON object per provider';
    case 'encoding':
      return 'encoding label';
    case 'language':
      return 'ISO-639-1 code';
    case 'url':
      return 'URL';
    default:
      return type.kind;
  }
}

const code = (text: string) => `\`${text}\``;
/** A table cell: pipes would end it. */
const cell = (text: string) => text.replace(/\|/g, '\\|');
/** Prose: `<provider>` would read as an HTML tag. */
const prose = (text: string) => text.replace(/</g, '&lt;').replace(/>/g, '&gt;');

function optionCell(spec: OptionSpec): string {
  if (spec.flag === undefined) return 'job file only';
  const negated =
    spec.type.kind === 'switch' && spec.type.negatedHelp !== undefined
      ? ` / ${code(`--no-${longFlag(spec)?.slice(2)}`)}`
      : '';
  return `${code(spec.flag)}${negated}`;
}

function row(spec: OptionSpec): string {
  const shown = defaultText(spec);
  const cells = [
    optionCell(spec),
    prose(spec.help),
    valueText(spec.type),
    shown === undefined ? '' : spec.env !== undefined ? code(shown) : prose(shown),
    spec.job === undefined ? '' : `${code(spec.job)}${spec.required ? ' (required)' : ''}`,
    spec.commands.join(', '),
  ];
  return `| ${cells.map(cell).join(' | ')} |`;
}

/** The reference, a Markdown table with one row per option, in the table's order. */
export function renderOptionsReference(): string {
  const lines = [
    'A flag overrides the job file, which overrides the environment, which overrides the default.',
    'A command that does not list an option refuses it. Generated from `src/config/options-table.ts`',
    'by `scripts/options-doc.mjs`: edit the table, not this section.',
    '',
    '| option | what it does | value | default | job file | commands |',
    '|---|---|---|---|---|---|',
    ...optionEntries().map(([, spec]) => row(spec)),
  ];
  return `${lines.join('\n')}\n`;
}
