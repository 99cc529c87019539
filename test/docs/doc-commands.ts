/**
 * The shell commands a Markdown page shows: every line of its ```sh / ```bash blocks, and the
 * inline `code` spans of its prose that start with a program a reader would type (`embedpipe …`,
 * `npm …`, `duckdb -c …`, `python3 -c …`). Words are split the way a POSIX shell splits them
 * (quotes, `\` line continuations, `# comments`, `&&` and `;` between commands), so a test can run
 * them with execFile, no shell in between.
 */

/** One command as the docs show it. */
export interface DocCommand {
  /** The page, relative to the repository: `README.md`, `docs/output.md`. */
  file: string;
  /** 1-based line the command starts on. */
  line: number;
  /** As shown: continuations joined, the comment left off. */
  text: string;
  /** Its words, quotes removed; `npx embedpipe` and `node dist/cli/main.js` spelled `embedpipe`. */
  words: string[];
  /** From a fenced block or an inline span of the prose. */
  from: 'block' | 'inline';
}

/** Fence languages whose lines are shell commands. */
export const SHELL_FENCES = new Set(['sh', 'bash', 'shell', 'console']);
/** Fence languages that hold no command (a listing, an example file). */
export const OTHER_FENCES = new Set(['text', 'json', 'jsonc', 'sql', 'ts', 'js', 'yaml', 'python']);

/** Inline spans that are commands: one of these programs, and at least one argument. */
const INLINE_COMMAND =
  /^(?:npx embedpipe|embedpipe|node dist\/cli\/main\.js|npm|npx|duckdb -c|python3? -c|docker(?:-compose| compose))\s+\S/;

interface Fence {
  /** Line of the opening ``` (1-based). */
  line: number;
  lang: string;
  body: string;
}

/** The page's fenced blocks, and its prose with each fence blanked (line numbers kept). */
export function splitFences(markdown: string): { fences: Fence[]; prose: string } {
  const fences: Fence[] = [];
  const prose: string[] = [];
  let open: { line: number; lang: string; body: string[] } | undefined;
  markdown.split('\n').forEach((text, index) => {
    const fence = /^\s*```\s*([\w-]*)/.exec(text);
    if (fence && !open) {
      open = { line: index + 1, lang: fence[1]!.toLowerCase(), body: [] };
      prose.push('');
    } else if (fence && open) {
      fences.push({ line: open.line, lang: open.lang, body: open.body.join('\n') });
      open = undefined;
      prose.push('');
    } else {
      open?.body.push(text);
      prose.push(open ? '' : text);
    }
  });
  if (open) throw new Error(`a fence opened on line ${open.line} is never closed`);
  return { fences, prose: prose.join('\n') };
}

/** Every command of a page: its shell blocks' lines and its prose's inline command spans. */
export function commandsIn(file: string, markdown: string): DocCommand[] {
  const { fences, prose } = splitFences(markdown);
  const commands: DocCommand[] = [];
  for (const fence of fences) {
    if (!SHELL_FENCES.has(fence.lang)) continue;
    for (const c of shellCommands(fence.body)) {
      const line = fence.line + 1 + lineOf(fence.body, c.start);
      commands.push({ file, line, text: c.text, words: canonical(c.words), from: 'block' });
    }
  }
  for (const span of prose.matchAll(/`([^`]+)`/g)) {
    // A table cell escapes its pipes; a span may wrap onto the next line.
    const code = span[1]!.replaceAll('\\|', '|').replace(/\s+/g, ' ').trim();
    if (!INLINE_COMMAND.test(code)) continue;
    const line = lineOf(prose, span.index) + 1;
    for (const c of shellCommands(code)) {
      commands.push({ file, line, text: c.text, words: canonical(c.words), from: 'inline' });
    }
  }
  return commands.sort((a, b) => a.line - b.line);
}

/** `npx embedpipe …` and `node dist/cli/main.js …` are the same CLI: spelled `embedpipe …`. */
function canonical(words: string[]): string[] {
  if (words[0] === 'npx' && words[1] === 'embedpipe') return words.slice(1);
  if (words[0] === 'node' && words[1] === 'dist/cli/main.js') return ['embedpipe', ...words.slice(2)];
  return words;
}

function lineOf(text: string, offset: number): number {
  return text.slice(0, offset).split('\n').length - 1;
}

/**
 * Shell text split into commands of words: '…' and "…" quoting (with \" \\ \$ \` escapes inside
 * double quotes), `\` + newline joins lines, `#` at the start of a word comments out the rest of
 * the line, and a newline, `;` or `&&` ends a command.
 */
export function shellCommands(src: string): Array<{ start: number; text: string; words: string[] }> {
  const commands: Array<{ start: number; text: string; words: string[] }> = [];
  let words: string[] = [];
  let word: string | undefined;
  let start = -1;
  let end = -1;
  const endWord = () => {
    if (word !== undefined) words.push(word);
    word = undefined;
  };
  const endCommand = () => {
    endWord();
    if (words.length > 0) {
      const text = src
        .slice(start, end)
        .replace(/\s*\\\n\s*/g, ' ')
        .trim();
      commands.push({ start, text, words });
    }
    words = [];
    start = -1;
  };
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (c === '\\' && src[i + 1] === '\n') {
      i++;
    } else if (c === '\n' || c === ';') {
      endCommand();
    } else if (c === '&' && src[i + 1] === '&') {
      endCommand();
      i++;
    } else if (c === ' ' || c === '\t') {
      endWord();
    } else if (c === '#' && word === undefined) {
      while (i + 1 < src.length && src[i + 1] !== '\n') i++;
    } else {
      if (start < 0) start = i;
      word ??= '';
      if (c === "'") {
        const close = src.indexOf("'", i + 1);
        if (close < 0) throw new Error(`unclosed ' in: ${src.slice(start)}`);
        word += src.slice(i + 1, close);
        i = close;
      } else if (c === '"') {
        for (i++; src[i] !== '"'; i++) {
          if (i >= src.length) throw new Error(`unclosed " in: ${src.slice(start)}`);
          if (src[i] === '\\' && '"\\$`\n'.includes(src[i + 1] ?? '')) i++;
          word += src[i];
        }
      } else if (c === '\\') {
        word += src[++i] ?? '';
      } else {
        word += c;
      }
      end = i + 1;
    }
  }
  endCommand();
  return commands;
}

/** The `--flags` a command uses (`--out`, `--no-allow-fallbacks`), also in a synopsis's `[--json]`. */
export function flagsOf(words: readonly string[]): string[] {
  return words.flatMap((word) => {
    const flag = /^\[?(--[a-z0-9][a-z0-9-]*)/.exec(word);
    return flag ? [flag[1]!] : [];
  });
}

/** The subcommand of an `embedpipe` command: its first word that is neither a flag nor a placeholder. */
export function subcommandOf(words: readonly string[]): string | undefined {
  return words.slice(1).find((word) => /^[a-z]/.test(word));
}

/**
 * A synopsis's words as one command to run: `[optional]` parts kept without their brackets, `…`
 * dropped, and of alternatives `[a | b]` the first (`[--offset N --limit N | --all]` → `--offset N
 * --limit N`). Placeholders (`DIR`, `N`, `vN`) are left for the caller to fill in; a command that
 * is no synopsis comes back as it was.
 */
export function synopsisAsCommand(words: readonly string[]): string[] {
  const command: string[] = [];
  let depth = 0;
  /** Depth of the group whose later alternatives are being skipped, or 0. */
  let skipping = 0;
  for (const word of words) {
    const opens = /^\[*/.exec(word)![0].length;
    const closes = /\]*$/.exec(word)![0].length;
    const bare = word.slice(opens, word.length - closes);
    depth += opens;
    if (bare === '|' && depth > 0 && skipping === 0) skipping = depth;
    else if (skipping === 0 && bare !== '' && bare !== '…') command.push(bare);
    depth -= closes;
    if (skipping > depth) skipping = 0;
  }
  return command;
}
