// Chunker throughput on generated corpora: `npx tsc -p tsconfig.build.json && node bench/chunker.bench.mjs`.
// MB/s counts UTF-8 bytes of input (what the corpus file weighs). CHUNKING_MODULE overrides the module
// under test (e.g. a build in another folder).
// The baseline is cl100k (gpt-tokenizer) counting the same texts: what a chunker that counted tokens
// would pay at least. embedpipe's chunker counts UTF-8 bytes under class weights instead.
import { performance } from 'node:perf_hooks';
import { countTokens } from 'gpt-tokenizer/encoding/cl100k_base';

const modulePath = process.env.CHUNKING_MODULE ?? new URL('../dist/chunking/index.js', import.meta.url).href;
const { chunkDocument, chunkTokenBudget } = await import(modulePath);

const MB = 1_000_000;
const maxTokens = chunkTokenBudget({});

/** Deterministic pseudo-random numbers (LCG), so every run measures the same text. */
function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const WORDS = (
  'the of and to in is was that for it with as his on be at by had are but from or have an they which ' +
  'one you were her all she there would their we him been has when who will more no if out so said what ' +
  'up its about into than them can only other new some could time these two may then do first any my now ' +
  'such like our over man me even most made after also did many before must through back years where much ' +
  'your way well down should because each just those people how too little state good very make world ' +
  'still own see men work long get here between both life being under never day same another know while ' +
  'last might us great old year off come since against go came right used take three pipeline embedding ' +
  'throughput gateway manifest incremental deterministic tokenizer boundary paragraph sentence'
).split(' ');

function sentence(rand, { punctuation = true } = {}) {
  const n = 6 + Math.floor(rand() * 20);
  const words = [];
  for (let i = 0; i < n; i++) {
    let word = WORDS[Math.floor(rand() * WORDS.length)];
    if (i === 0) word = word[0].toUpperCase() + word.slice(1);
    if (punctuation && i < n - 1 && rand() < 0.08) word += ',';
    words.push(word);
  }
  return words.join(' ') + (punctuation ? ['.', '.', '.', '!', '?'][Math.floor(rand() * 5)] : '');
}

function prose(rand, bytes, { paragraphs = true, punctuation = true } = {}) {
  const parts = [];
  let size = 0;
  while (size < bytes) {
    const n = 2 + Math.floor(rand() * 8);
    const para = Array.from({ length: n }, () => sentence(rand, { punctuation })).join(' ');
    parts.push(para);
    size += para.length + 2;
  }
  return parts.join(paragraphs ? '\n\n' : ' ');
}

function code(rand, bytes) {
  const lines = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const id = Math.floor(rand() * 1e6);
    const line =
      i % 3 === 0
        ? `{"id":${id},"name":"item_${id.toString(36)}","tags":["a${id % 7}","b${id % 11}"],"score":${(rand() * 100).toFixed(3)},"ok":${rand() < 0.5}}`
        : i % 3 === 1
          ? `  const value${i} = compute(items[${id % 97}], { limit: ${id % 500}, mode: 'fast' }); // step ${i}`
          : `  if (value${i - 1} > threshold && !seen.has(key_${id % 13})) { results.push({ key: key_${id % 13}, value: value${i - 1} }); }`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n');
}

const CJK =
  '的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坏兴切统';

function cjk(rand, bytes) {
  const parts = [];
  let size = 0;
  while (size < bytes) {
    const n = 8 + Math.floor(rand() * 30);
    let s = '';
    for (let i = 0; i < n; i++) s += CJK[Math.floor(rand() * CJK.length)];
    s += rand() < 0.3 ? '，' : '。';
    if (rand() < 0.05) s += '\n\n';
    parts.push(s);
    size += Buffer.byteLength(s);
  }
  return parts.join('');
}

function base64Word(rand, bytes) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const out = new Array(bytes);
  for (let i = 0; i < bytes; i++) out[i] = alphabet[Math.floor(rand() * 64)];
  return out.join('');
}

function lettersWord(rand, bytes) {
  const out = new Array(bytes);
  for (let i = 0; i < bytes; i++) out[i] = String.fromCharCode(97 + Math.floor(rand() * 26));
  return out.join('');
}

/** cl100k alone, counting the same texts once (64 kB at a time): the floor under a counting chunker. */
function countOnce(texts) {
  const started = performance.now();
  for (const text of texts)
    for (let i = 0; i < text.length; i += 65_536) countTokens(text.slice(i, i + 65_536));
  return (performance.now() - started) / 1000;
}

function measure(name, texts, { baseline = true, ...options } = {}) {
  const bytes = texts.reduce((sum, t) => sum + Buffer.byteLength(t), 0);
  let chunks = 0;
  let tokens = 0;
  const started = performance.now();
  texts.forEach((text, i) => {
    const document = { id: `d${i}`, text, source: 'bench', line: 1 };
    for (const chunk of chunkDocument(document, { model: 'bench', maxTokens, ...options })) {
      chunks += 1;
      tokens += chunk.tokens;
    }
  });
  const seconds = (performance.now() - started) / 1000;
  const fill = chunks > 0 ? tokens / chunks / maxTokens : 0;
  // Giant single-class runs are quadratic for the bare tokenizer, so they get no baseline.
  const floor = baseline ? `${(bytes / MB / countOnce(texts)).toFixed(2).padStart(6)} MB/s` : '     —';
  console.log(
    `${name.padEnd(40)} ${(bytes / MB).toFixed(1).padStart(5)} MB  ${(bytes / MB / seconds).toFixed(2).padStart(6)} MB/s` +
      `  (cl100k count once: ${floor})  ${String(chunks).padStart(5)} chunks  avg fill ${(fill * 100).toFixed(0)}%`,
  );
}

const rand = random(42);
const docsOf = (make, count, each) => Array.from({ length: count }, () => make(rand, each));

console.log(`chunk budget ${maxTokens} tokens (byte-bound weights), node ${process.version}`);
// Warm-up: JIT and the tokenizer's merge cache.
measure('warm-up (prose)', docsOf(prose, 20, 50_000));
measure('English prose, 2000 docs × 5 kB', docsOf(prose, 2000, 5_000));
measure('English prose, 200 docs × 50 kB', docsOf(prose, 200, 50_000));
measure('English prose, 50 kB docs, overlap 200', docsOf(prose, 200, 50_000), { overlapTokens: 200 });
measure('English prose, one 10 MB paragraph', [prose(rand, 10 * MB, { paragraphs: false })]);
measure('words only, one 10 MB sentence', [prose(rand, 10 * MB, { paragraphs: false, punctuation: false })]);
measure('code/JSON lines, 100 docs × 100 kB', docsOf(code, 100, 100_000));
measure('CJK, 100 docs × 100 kB', docsOf(cjk, 100, 100_000));
measure('giant word, base64-like, 10 MB', [base64Word(rand, 10 * MB)]);
measure('giant word, random letters, 2 MB', [lettersWord(rand, 2 * MB)], { baseline: false });
measure('giant word, one letter repeated, 10 MB', ['a'.repeat(10 * MB)], { baseline: false });
