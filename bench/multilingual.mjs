// A hostile multilingual corpus, beside lib.mjs's English prose: deterministic (seeded), written as
// JSONL `{"id": "<kind>-<n>", "text": "..."}`, one piece per line, every piece at most 1,000 code
// points (so at most ~4 KB of UTF-8, and one chunk even at 4 cl100k tokens per code point).
//
//   node bench/multilingual.mjs OUT.jsonl [MB]          (default 64 MB, seed 1; prints the mix)
//   import { writeMultilingualCorpus } from './multilingual.mjs'
//
// The mix, as a share of pieces (roughly a multilingual web crawl, with the awkward parts of one
// kept more often than a crawl has them; bytes per piece differ by script, so the CLI prints both):
//
//   latin      18%  fr de es pt vi pl cs tr is ro; precomposed (NFC) in ~55% of pieces, fully
//                   decomposed (NFD, combining marks) in ~30%, word-by-word mixed in ~15%; a few
//                   stacked combining marks, narrow no-break spaces, soft hyphens
//   chinese    10%  simplified and traditional, full-width punctuation and digits; ~3% of words
//                   are ideographs from U+20000–U+2A6DF (surrogate pairs), ~30% in 1 piece of 12
//   japanese    8%  kanji, hiragana, katakana (some half-width), U+3000 spaces, a few CJK Ext-B
//   korean      5%  hangul with spaces; 1 piece in 12 decomposed into conjoining jamo (NFD)
//   cyrillic    8%  Russian, Ukrainian, Serbian (ё, ї, ґ, ђ, љ, џ)
//   greek       3%  monotonic, some polytonic, final sigma, the Greek question mark U+037E
//   arabic      6%  RTL with ASCII, Arabic-Indic and Persian digits and Latin terms mixed in;
//                   harakat in some pieces, tatweel, RLM/LRM marks
//   hebrew      3%  RTL with digits, Latin terms, gershayim; niqqud in some pieces
//   emoji       9%  social posts: ZWJ families and professions, skin-tone modifiers, regional-
//                   indicator flags (and an odd count of them now and then), tag-sequence flags,
//                   keycaps (with and without U+FE0F), text/emoji variation selectors
//   code       12%  JSON (pretty and minified, raw and \u-escaped non-ASCII), C (tab-indented),
//                   Python (spaces or tabs), with comments in other scripts
//   long        6%  one unbroken token per piece, aimed at 1.5–4 KB of UTF-8: base64 (data: URIs),
//                   hex, percent-encoded URLs, IRIs with raw non-ASCII paths, one long "word"
//                   (German-like compounds, Cyrillic, CJK, Ext-B ideographs, repeated emoji or
//                   characters). ASCII tokens are cut by the 1,000-code-point cap at ~1 KB;
//                   multi-byte ones reach the full 1.5–4 KB (pass maxCodePoints: 4000 for full-size
//                   ASCII tokens).
//   mixed     12%  2–5 segments of the prose kinds above in one piece (a forum page, a bilingual
//                   caption): script changes mid-piece, LTR/RTL in one paragraph
//
// By bytes (default seed, 64 MB: ~74k pieces, ~870 B and ~450 code points each on average): Chinese
// 14%, Japanese 12%, mixed 12%, Latin 11%, long tokens 11%, code 7.5%, Cyrillic 7.4%, emoji 6.9%,
// Korean 6.5%, Arabic 5.5%, Greek 2.9%, Hebrew 2.7%.
//
// Line endings: ~12% of pieces with line breaks use CRLF throughout, ~3% mix CRLF and LF. Piece
// lengths: ~30% short (20–200 code points), ~50% 200–700, ~20% 700–1,000. Pieces are cut at a code
// point (never inside a surrogate pair), sometimes inside a grapheme cluster, as crawls cut them.
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { sentence as englishSentence, random } from './lib.mjs';

export const MAX_CODE_POINTS = 1000;

const words = (s) => s.trim().split(/\s+/);

const LATIN = {
  fr: {
    w: words(`le la les des une un et est dans pour que qui sur avec pas plus été déjà très où à ça élève
      cœur garçon naïve Noël français façade rôle château forêt hôpital être créé théâtre fenêtre leçon
      œuvre préféré bientôt voilà août Québec s'il aujourd'hui événement première`),
    end: ['.', '\u202F!', '\u202F?', '…', '.'],
  },
  de: {
    w: words(`der die das und ist nicht mit für über schön Straße Größe Mädchen Fußgängerübergang Äpfel Öl
      Übung groß heißen müssen können Bücher Brötchen Grüße Donaudampfschifffahrt Gemütlichkeit
      Weißwurst Zürich München Köln Österreich Maßnahme gemäß`),
    end: ['.', '!', '?', '.'],
  },
  es: {
    w: words(`el la los las y de que en un una es por con para año niño mañana corazón canción información
      pingüino está también después sí más así árbol lápiz pequeño España Málaga acción`),
    end: ['.', '.', '?', '!'],
    wrap: { '?': '¿', '!': '¡' },
  },
  pt: {
    w: words(`o a os as e de que em um uma não são ação informação coração pão mãe irmão também você está
      avó avô João São Paulo Brasília português à às`),
    end: ['.', '.', '!', '?'],
  },
  vi: {
    w: words(`tiếng Việt người được những thành phố Hà Nội Hồ Chí Minh nghiên cứu dữ liệu mô hình và
      của là có không một các cho với trong này đã sẽ rất nhiều chúng tôi học sinh Đà Nẵng`),
    end: ['.', '.', '?', '!'],
  },
  pl: {
    w: words(`i w na z że się nie jest do to Łódź źdźbło gęś żółć Kraków Gdańsk będzie może przez również
      ściągnąć zażółć jaźń Wrocław`),
    end: ['.', '.', '?', '!'],
  },
  cs: {
    w: words(`a v na je se že to příliš žluťoučký kůň úpěl ďábelské ódy Praha Brno čeština řeka dítě`),
    end: ['.', '.', '?'],
  },
  tr: {
    w: words(`ve bir bu da için ile çok güzel şöyle İstanbul Iğdır ağaç öğrenci üniversite şehir değil
      Türkçe ışık`),
    end: ['.', '.', '?', '!'],
  },
  is: { w: words('og að er á í það þú ég við Þingvellir Reykjavík sjö Ísland ræða æði'), end: ['.', '.'] },
  // Romanian twice over: ș ț (comma below, correct) and ş ţ (cedilla, what old keyboards typed).
  ro: { w: words('și în cu că pe la este nu țară şi ştiinţă știință ţară București Timișoara'), end: ['.'] },
};
const LATIN_LANGS = Object.keys(LATIN);

const CYRILLIC = words(`привет мир данные модель вектор язык русский компьютер интернет компания университет
  студент сегодня завтра в на и не что это как с по для от Москва Санкт-Петербург Новосибирск ещё ёлка
  объём подъезд їжак ґанок є інформація Київ Україна Београд ђак љубав џем њива ћирилица Ђорђе`);
const GREEK = words(`γεια σας κόσμος δεδομένα μοντέλο διάνυσμα γλώσσα ελληνικά υπολογιστής Αθήνα
  Θεσσαλονίκη και το η ο της του είναι με για όλοι ψυχή ευχαριστώ σήμερα αύριο`);
const GREEK_POLYTONIC = words('ἀρχὴ ὁ τῆς Ἀθῆναι ἐν λόγος ἦν θεὸν πρὸς τὸν καὶ ᾠδή ῥήτωρ');

const CHINESE =
  words(`我们 数据 模型 向量 嵌入 文本 处理 系统 研究 中国 北京 上海 经济 发展 技术 人工智能 机器学习
  语言 今天 天气 非常 好 的 了 是 在 有 和 不 这 个 人 时间 问题 学校 学生 老师 電腦 網路 資料 繁體 臺灣
  香港 醫院 銀行 圖書館 龍 鬱 齉 讓 說 為 與 關於 應用 進行 可以 已经 因为 所以 但是`);
const ZH_PUNCT = ['，', '，', '、', '；', '：'];
const ZH_END = ['。', '。', '！', '？', '……'];
const JA_NOUN = words(`日本 東京 大阪 会社 情報 研究 開発 技術 電車 駅 天気 今日 明日 時間 世界 言語 処理 学習
  データ モデル ベクトル コンピューター インターネット サーバー プログラム テスト ユーザー ダウンロード
  アップデート ラーメン 𠮷野家 𩸽 東京スカイツリー`);
const JA_HALFWIDTH = words('ｶﾀｶﾅ ﾃﾞｰﾀ ｻｰﾊﾞｰ ﾌﾟﾛｸﾞﾗﾑ ｱｲｳｴｵ');
const JA_PARTICLE = words('は が を に で と の も から まで へ より');
const JA_END = words(`です。 ます。 でした。 ました。 しています。 について。 ですが、 ありがとうございます。
  よろしくお願いします！ でしょうか？ と思います。 だ。 ね。`);
const KOREAN =
  words(`안녕하세요 데이터 모델 벡터 임베딩 한국어 서울 부산 회사 연구 개발 기술 오늘 날씨 정말 좋아요
  합니다 있습니다 없습니다 그리고 하지만 사용자 컴퓨터 인터넷 프로그램 학교 학생 선생님 똠방각하 뷁 읽었다`);
const KO_PARTICLE = ['', '', '은', '는', '이', '가', '을', '를', '에서', '으로', '의', '도'];
const ARABIC =
  words(`مرحبا العالم البيانات النموذج المتجه اللغة العربية الذكاء الاصطناعي الحاسوب الإنترنت الشركة
  الجامعة الطالب المعلم اليوم غدا في من إلى على مع هذا هذه التي الذي كان يكون قال بين عن أن لا نعم شكرا
  مدينة القاهرة الرياض دبي بيروت سلام کتاب پژوهش گزارش`);
const ARABIC_VOWELED = words('كَتَبَ الْكِتَابُ مُحَمَّدٌ عَرَبِيٌّ السَّلَامُ عَلَيْكُمْ بِسْمِ اللَّهِ');
const HEBREW = words(`שלום עולם נתונים מודל וקטור שפה עברית מחשב אינטרנט חברה אוניברסיטה סטודנט היום מחר של את
  על עם זה זאת היא הוא אני לא כן תודה ירושלים חיפה צה״ל ת״א מע״מ`);
const HEBREW_NIQQUD = words('שָׁלוֹם בְּרֵאשִׁית עִבְרִית תּוֹדָה יְרוּשָׁלַיִם');
const LATIN_TERMS = words(
  'iPhone 15 Google API COVID-19 GPU USB-C Wi-Fi Python https://example.com/a?b=1 PDF 5G',
);

// Emoji, spelled by code point so the file shows what each one is made of.
const cp = (...points) => String.fromCodePoint(...points);
const ZWJ = 0x200d;
const SIMPLE_EMOJI = [
  0x1f600, 0x1f602, 0x1f525, 0x1f44d, 0x1f389, 0x2728, 0x1f64f, 0x1f680, 0x1f914, 0x1f4af,
].map((c) => cp(c));
const SKIN_TONES = [0x1f3fb, 0x1f3fc, 0x1f3fd, 0x1f3fe, 0x1f3ff];
const TONABLE = [0x1f44d, 0x1f44b, 0x1f64f, 0x270c, 0x1f9d1, 0x1f469, 0x1f468];
const FAMILIES = [
  cp(0x1f468, ZWJ, 0x1f469, ZWJ, 0x1f467, ZWJ, 0x1f466),
  cp(0x1f469, ZWJ, 0x1f469, ZWJ, 0x1f466),
  cp(0x1f468, ZWJ, 0x1f468, ZWJ, 0x1f467, ZWJ, 0x1f467),
  cp(0x1f469, ZWJ, 0x2764, 0xfe0f, ZWJ, 0x1f468), // couple with heart
  cp(0x1f3f3, 0xfe0f, ZWJ, 0x1f308), // rainbow flag
];
const PROFESSIONS = [0x1f4bb, 0x1f52c, 0x1f680, 0x1f373, 0x1f3a8, 0x1f692];
const MEDICAL = [0x2695, 0xfe0f]; // ⚕️: a BMP symbol needing the emoji variation selector
const COUNTRIES = words('US GB FR DE JP CN KR BR IN UA IL SA EG GR RU VN PL TR MX ZA NG AR CA IR');
const flag = (code) => cp(...[...code].map((c) => 0x1f1e6 + c.charCodeAt(0) - 65));
const TAG_FLAGS = ['gbeng', 'gbsct', 'gbwls'].map((t) =>
  cp(0x1f3f4, ...[...t].map((c) => 0xe0000 + c.charCodeAt(0)), 0xe007f),
);
const VARIATION = [
  cp(0x2764, 0xfe0f),
  cp(0x2764, 0xfe0e),
  cp(0x2600, 0xfe0f),
  cp(0x263a, 0xfe0e),
  cp(0x2122, 0xfe0f),
  cp(0x00a9, 0xfe0f),
  cp(0x2194, 0xfe0f),
  cp(0x270c, 0xfe0f),
];
const HASHTAGS = words('#tbt #مرحبا #日本 #привет #fyp #NLP #여행 #שבת_שלום');

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const HEX = '0123456789abcdef';
const COMPOUND =
  words(`Donau Dampf Schiff Fahrts Gesellschafts Kapitäns Witwen Renten Versicherungs Überwachungs
  Grundstücks Verkehrs Genehmigungs Zuständigkeits Übertragungs Verordnungs Straßen Bahn Größen`);
const IDENT = words(`buf len count index offset header payload result value node next prev data size flags ctx
  state token chunk vector batch row`);

/** The code points of `s`, counted without allocating. */
export function codePointLength(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++, n++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
  }
  return n;
}

/** The first `max` code points of `s` (never half a surrogate pair). */
function truncate(s, max) {
  let i = 0;
  for (let n = 0; i < s.length && n < max; n++) i += s.codePointAt(i) > 0xffff ? 2 : 1;
  return s.slice(0, i);
}

function generator(rand, maxCodePoints) {
  const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
  const pick = (a) => a[Math.floor(rand() * a.length)];
  const chance = (p) => rand() < p;
  const capitalize = (w) => w.charAt(0).toUpperCase() + w.slice(1);
  const extB = () => cp(0x20000 + Math.floor(rand() * (0x2a6df - 0x20000 + 1)));
  const digits = (n, zero = 0x30) => Array.from({ length: n }, () => cp(zero + int(0, 9))).join('');
  const number = () => {
    const r = rand();
    if (r < 0.4) return String(int(1, 2030));
    if (r < 0.6) return `${int(0, 999)}.${digits(2)}`;
    if (r < 0.8) return `${int(1, 99)}%`;
    return `${int(1, 28)}/${int(1, 12)}/${int(1990, 2030)}`;
  };

  /** Appends parts from `next()` until `target` code points (a paragraph at a time). */
  function fill(target, next) {
    let s = '';
    let n = 0;
    while (n < target) {
      const part = next();
      s += part;
      n += codePointLength(part);
    }
    return s;
  }
  const paragraphs = (target, sentenceOf) =>
    fill(target, () => {
      const para = Array.from({ length: int(1, 5) }, sentenceOf).join(' ');
      return para + (chance(0.7) ? '\n\n' : '\n');
    });

  // ---- prose kinds ------------------------------------------------------------------------------
  function latin(target) {
    const lang = LATIN[pick(LATIN_LANGS)];
    const form = rand(); // < 0.3 NFD, < 0.45 word-by-word mixed, else NFC
    const zalgo = chance(0.03);
    const text = paragraphs(target, () => {
      const out = [];
      for (let i = 0, n = int(4, 16); i < n; i++) {
        let w = pick(lang.w);
        if (i === 0) w = capitalize(w);
        if (chance(0.04)) w = number();
        if (chance(0.01)) w = w.replace(/(.{3})/, '$1\u00ad'); // soft hyphen
        if (zalgo && chance(0.15)) w += cp(...Array.from({ length: int(2, 8) }, () => int(0x300, 0x36f)));
        if (form >= 0.3 && form < 0.45 && chance(0.5)) w = w.normalize('NFD');
        out.push(w + (i < n - 1 && chance(0.08) ? ',' : ''));
      }
      const end = pick(lang.end);
      return (lang.wrap?.[end.trim()] ?? '') + out.join(chance(0.02) ? '\u00a0' : ' ') + end;
    });
    return form < 0.3 ? text.normalize('NFD') : text;
  }

  function chinese(target) {
    const rare = chance(1 / 12) ? 0.3 : 0.03;
    return paragraphs(target, () => {
      let s = chance(0.1) ? pick(['“', '「', '《']) : '';
      for (let i = 0, n = int(6, 24); i < n; i++) {
        const r = rand();
        if (r < rare) s += Array.from({ length: int(1, 3) }, extB).join('');
        else if (r < rare + 0.03) s += chance(0.5) ? `${number()}年` : `${digits(int(1, 2), 0xff10)}月`;
        else if (r < rare + 0.05) s += ` ${pick(['AI', 'GPU', 'Python', 'iPhone', 'API'])} `;
        else s += pick(CHINESE);
        if (i < n - 1 && chance(0.12)) s += pick(ZH_PUNCT);
      }
      return s + pick(ZH_END);
    }).replace(/\n\n/g, chance(0.5) ? '\n' : '\n\u3000\u3000');
  }

  function japanese(target) {
    return paragraphs(target, () => {
      let s = '';
      for (let i = 0, n = int(2, 5); i < n; i++) {
        const r = rand();
        if (r < 0.03) s += pick(JA_HALFWIDTH);
        else if (r < 0.05) s += extB();
        else s += pick(JA_NOUN);
        s += pick(JA_PARTICLE);
        if (chance(0.1)) s += chance(0.5) ? '、' : '\u3000';
        if (chance(0.05)) s += `「${pick(JA_NOUN)}」`;
      }
      return s + pick(JA_END);
    }).replace(/ /g, '');
  }

  function korean(target) {
    const text = paragraphs(target, () => {
      const out = [];
      for (let i = 0, n = int(3, 12); i < n; i++) out.push(pick(KOREAN) + pick(KO_PARTICLE));
      return out.join(' ') + pick(['.', '.', '?', '!', '요.']);
    });
    return chance(1 / 12) ? text.normalize('NFD') : text;
  }

  function cyrillic(target) {
    return paragraphs(target, () => {
      const out = [];
      for (let i = 0, n = int(4, 16); i < n; i++) {
        let w = chance(0.04) ? number() : pick(CYRILLIC);
        if (i === 0) w = capitalize(w);
        out.push(w + (chance(0.07) ? ',' : ''));
      }
      return out.join(' ') + pick(['.', '.', '!', '?', '…', ' —']);
    });
  }

  function greek(target) {
    const polytonic = chance(0.2);
    return paragraphs(target, () => {
      const out = [];
      for (let i = 0, n = int(4, 14); i < n; i++) {
        let w = polytonic && chance(0.5) ? pick(GREEK_POLYTONIC) : pick(GREEK);
        if (i === 0) w = capitalize(w);
        out.push(w);
      }
      return out.join(' ') + pick(['.', '.', '\u037e', '·']);
    });
  }

  function rtl(target, vocab, voweled, { marks, digitsZero }) {
    const vowels = chance(0.15);
    return paragraphs(target, () => {
      const out = [];
      for (let i = 0, n = int(4, 16); i < n; i++) {
        const r = rand();
        if (r < 0.05) out.push(digits(int(1, 4), pick(digitsZero)));
        else if (r < 0.09) out.push(number());
        else if (r < 0.14) out.push(pick(LATIN_TERMS));
        else if (r < 0.16 && marks) out.push(`${pick(vocab)}\u200f`);
        else if (r < 0.17 && marks) out.push(`\u200e${pick(LATIN_TERMS)}\u200e`);
        else if (r < 0.18) out.push(`(${pick(vocab)})`);
        else out.push(vowels && chance(0.4) ? pick(voweled) : pick(vocab));
      }
      return out.join(' ');
    });
  }
  const arabic = (target) =>
    rtl(target, ARABIC, ARABIC_VOWELED, { marks: true, digitsZero: [0x30, 0x660, 0x6f0] })
      .replace(/\n+/g, (m) => pick(['؟', '.', '،', '']) + m)
      .replace(/ال(\S)/g, (m, c) => (chance(0.01) ? `ال${c}\u0640\u0640` : m));
  const hebrew = (target) =>
    rtl(target, HEBREW, HEBREW_NIQQUD, { marks: false, digitsZero: [0x30] }).replace(
      /\n+/g,
      (m) => pick(['.', '?', '!', '']) + m,
    );

  function emojiOne() {
    const r = rand();
    if (r < 0.3) return pick(SIMPLE_EMOJI);
    if (r < 0.45) return cp(pick(TONABLE), pick(SKIN_TONES));
    if (r < 0.55) return pick(FAMILIES);
    if (r < 0.67) {
      const person = cp(pick([0x1f469, 0x1f468, 0x1f9d1]), ...(chance(0.5) ? [pick(SKIN_TONES)] : []));
      return chance(0.2)
        ? cp(...[...person].map((c) => c.codePointAt(0)), ZWJ, ...MEDICAL)
        : person + cp(ZWJ, pick(PROFESSIONS));
    }
    if (r < 0.77)
      return chance(0.04) ? flag(pick(COUNTRIES)).slice(0, 2) + flag(pick(COUNTRIES)) : flag(pick(COUNTRIES));
    if (r < 0.8) return pick(TAG_FLAGS);
    if (r < 0.88)
      return cp(
        pick([...'0123456789#*'].map((c) => c.charCodeAt(0))),
        ...(chance(0.8) ? [0xfe0f] : []),
        0x20e3,
      );
    return pick(VARIATION);
  }
  function emoji(target) {
    return fill(target, () => {
      const ws = englishSentence(rand).split(' ');
      const out = [];
      for (const w of ws) {
        out.push(w);
        if (chance(0.25)) out.push(Array.from({ length: int(1, 3) }, emojiOne).join(chance(0.5) ? '' : ' '));
      }
      if (chance(0.3)) out.push(pick(HASHTAGS));
      if (chance(0.15)) out.push(`@user_${int(1, 9999)}`);
      return out.join(' ') + (chance(0.5) ? '\n' : ' ');
    });
  }

  // ---- code ---------------------------------------------------------------------------------------
  const ident = () => pick(IDENT) + (chance(0.4) ? `_${pick(IDENT)}` : '');
  const comment = () =>
    pick([
      () => englishSentence(rand, int(3, 10)),
      () => pick(CHINESE) + pick(CHINESE) + pick(CHINESE),
      () => `${pick(CYRILLIC)} ${pick(CYRILLIC)}`,
      () => pick(JA_NOUN) + pick(JA_END),
    ])();

  function jsonValue(depth) {
    const r = rand();
    if (depth > 2 || r < 0.3) {
      const leaf = rand();
      if (leaf < 0.3) return pick([...CHINESE, ...CYRILLIC, ...ARABIC, ...GREEK, ...LATIN.fr.w]);
      if (leaf < 0.5) return rand() * 200 - 100;
      if (leaf < 0.6) return int(0, 1e6);
      if (leaf < 0.7) return pick([true, false, null]);
      if (leaf < 0.8) return emojiOne();
      return englishSentence(rand, int(2, 8));
    }
    if (r < 0.55) return Array.from({ length: int(1, 6) }, () => jsonValue(depth + 1));
    const obj = {};
    for (let i = 0, n = int(1, 6); i < n; i++) obj[ident()] = jsonValue(depth + 1);
    return obj;
  }
  function json(target) {
    return fill(target, () => {
      const value = { id: int(1, 1e9), [ident()]: jsonValue(0), [ident()]: jsonValue(0) };
      let s = chance(0.6) ? JSON.stringify(value, null, chance(0.8) ? 2 : '\t') : JSON.stringify(value);
      // Escaped non-ASCII, as many serializers write it (surrogate pairs as two escapes).
      if (chance(0.3))
        s = s.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
      return `${s}\n`;
    });
  }
  function c(target) {
    return fill(target, () => {
      const [f, a, b] = [ident(), ident(), ident()];
      return (
        `/* ${comment()} */\nstatic int ${f}(const char *${a}, size_t ${b})\n{\n` +
        `\tif (${b} < ${int(1, 64)}) {\n\t\treturn -${int(1, 9)};\t// ${comment()}\n\t}\n` +
        `\tfor (size_t i = 0; i < ${b}; i++) {\n\t\tif (${a}[i] == '\\n')\n\t\t\tbreak;\n\t}\n` +
        `\tprintf("%s: %zu\\n", "${pick(CHINESE)}", ${b});\n\treturn 0;\n}\n\n`
      );
    });
  }
  function python(target) {
    const ind = chance(0.4) ? '\t' : '    ';
    return fill(target, () => {
      const [f, a, b] = [ident(), ident(), ident()];
      return (
        `def ${f}(${a}, ${b}=None):\n${ind}"""${comment()}"""\n${ind}if ${b} is None:\n${ind}${ind}${b} = {}\n` +
        `${ind}for i, x in enumerate(${a}):\n${ind}${ind}# ${comment()}\n${ind}${ind}${b}[x] = f"{i}\\t{x!r}"\n` +
        `${ind}return ${b}\n\n\nclass ${capitalize(f)}:\n${ind}name = "${pick(ARABIC)} ${pick(KOREAN)}"\n\n`
      );
    });
  }
  const code = (target) => pick([json, c, python])(target);

  // ---- long unbroken tokens -----------------------------------------------------------------------
  /** Appends `next()` until about `bytes` of UTF-8 or the room left under the code point cap. */
  function token(bytes, room, next) {
    let s = '';
    let b = 0;
    let n = 0;
    while (b < bytes && n < room) {
      const part = next();
      s += part;
      b += Buffer.byteLength(part);
      n += codePointLength(part);
    }
    return truncate(s, room);
  }
  function long() {
    const bytes = int(1500, 4000);
    const lead = pick(['', 'token: ', 'Download: ', '<img src="', 'sha256=', '参考: ', 'см. ', 'ראה: ']);
    const tail = pick(['', '', '\n', '">', ' ok', '。']);
    const room = maxCodePoints - codePointLength(lead) - codePointLength(tail);
    const r = rand();
    let t;
    if (r < 0.2) {
      const prefix = chance(0.5) ? 'data:image/png;base64,' : '';
      t = prefix + token(bytes, room - prefix.length, () => pick(B64.split(''))) + (chance(0.5) ? '==' : '');
      t = truncate(t, room);
    } else if (r < 0.35) t = token(bytes, room, () => pick(HEX.split('')));
    else if (r < 0.5) {
      const path = `https://example.com/${ident()}/`;
      t = truncate(
        path +
          token(bytes, room, () =>
            chance(0.5)
              ? encodeURIComponent(pick([...CHINESE, ...CYRILLIC]))
              : `${ident()}=${digits(int(1, 8))}&`,
          ),
        room,
      );
    } else if (r < 0.6)
      t = truncate(
        `https://例え.jp/${token(bytes, room, () => pick([...CHINESE, ...CYRILLIC, ...JA_NOUN]) + pick(['/', '-', '_', '']))}`,
        room,
      );
    else {
      const alphabet = pick([
        () => pick(COMPOUND),
        () => pick(CYRILLIC).replace(/[ -]/g, ''),
        () => pick(CHINESE),
        extB,
        () => pick(SIMPLE_EMOJI),
        () => pick(['ha', 'ー', '-', '=', 'ㅋ', '啊']),
      ]);
      // Half the time one unit over and over (`hahaha…`, `======…`), else a run of its alphabet.
      const unit = chance(0.5) ? alphabet() : undefined;
      t = token(bytes, room, unit === undefined ? alphabet : () => unit);
    }
    return lead + t + tail;
  }

  // ---- the mix ------------------------------------------------------------------------------------
  const PROSE = [latin, chinese, japanese, korean, cyrillic, greek, arabic, hebrew, emoji];
  function mixed(target) {
    const parts = [];
    for (let i = 0, n = int(2, 5); i < n; i++) parts.push(pick(PROSE)(Math.ceil(target / n)).trimEnd());
    return parts.join(pick(['\n\n', '\n', ' ', ' — ']));
  }
  const KINDS = [
    ['latin', 18, latin],
    ['chinese', 10, chinese],
    ['japanese', 8, japanese],
    ['korean', 5, korean],
    ['cyrillic', 8, cyrillic],
    ['greek', 3, greek],
    ['arabic', 6, arabic],
    ['hebrew', 3, hebrew],
    ['emoji', 9, emoji],
    ['code', 12, code],
    ['long', 6, long],
    ['mixed', 12, mixed],
  ];
  const totalWeight = KINDS.reduce((sum, [, w]) => sum + w, 0);

  function pieceLength() {
    const r = rand();
    if (r < 0.3) return int(20, 200);
    if (r < 0.8) return int(200, 700);
    return int(700, 1000);
  }

  return function piece() {
    let r = rand() * totalWeight;
    let k = 0;
    while (r >= KINDS[k][1]) r -= KINDS[k++][1];
    const [kind, , make] = KINDS[k];
    const target = Math.min(pieceLength(), maxCodePoints);
    let text = make(target);
    if (kind !== 'long') text = text.trimEnd();
    const endings = rand();
    if (endings < 0.12) text = text.replace(/\n/g, '\r\n');
    else if (endings < 0.15) text = text.replace(/\n/g, () => (chance(0.5) ? '\r\n' : '\n'));
    return { kind, text: truncate(text, kind === 'long' ? maxCodePoints : target) };
  };
}

/** Throws unless the piece is within the cap and well-formed UTF-16 (no lone surrogates). */
function check(id, text, maxCodePoints) {
  const n = codePointLength(text);
  if (n > maxCodePoints) throw new Error(`${id}: ${n} code points (cap ${maxCodePoints})`);
  if (n === 0) throw new Error(`${id}: empty`);
  if (!text.isWellFormed()) throw new Error(`${id}: lone surrogate`);
}

/**
 * Writes about `bytes` bytes of JSONL (or exactly `maxDocuments` pieces). Returns
 * `{ documents, bytes, mix }`, `mix` being per kind `{ documents, bytes, codePoints }`.
 */
export async function writeMultilingualCorpus(
  path,
  bytes,
  { seed = 1, maxDocuments = Infinity, maxCodePoints = MAX_CODE_POINTS } = {},
) {
  const piece = generator(random(seed), maxCodePoints);
  const out = createWriteStream(path);
  const mix = {};
  let written = 0;
  let n = 0;
  while (written < bytes && n < maxDocuments) {
    const { kind, text } = piece();
    const id = `${kind}-${n++}`;
    check(id, text, maxCodePoints);
    const line = `${JSON.stringify({ id, text })}\n`;
    const size = Buffer.byteLength(line);
    written += size;
    mix[kind] ??= { documents: 0, bytes: 0, codePoints: 0 };
    const m = mix[kind];
    m.documents += 1;
    m.bytes += size;
    m.codePoints += codePointLength(text);
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return { documents: n, bytes: written, mix };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [outPath, megabytes = '64'] = process.argv.slice(2);
  if (!outPath) {
    console.error('usage: node bench/multilingual.mjs OUT.jsonl [MB]');
    process.exit(2);
  }
  const started = performance.now();
  const result = await writeMultilingualCorpus(outPath, Number(megabytes) * 1e6);
  console.log(
    `${outPath}: ${result.documents} pieces, ${(result.bytes / 1e6).toFixed(1)} MB in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  console.table(
    Object.fromEntries(
      Object.entries(result.mix).map(([kind, m]) => [
        kind,
        {
          pieces: `${((m.documents / result.documents) * 100).toFixed(1)}%`,
          bytes: `${((m.bytes / result.bytes) * 100).toFixed(1)}%`,
          'bytes/piece': Math.round(m.bytes / m.documents),
          'code points/piece': Math.round(m.codePoints / m.documents),
        },
      ]),
    ),
  );
}
