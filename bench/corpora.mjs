// The two corpora the throughput comparisons run on, one place for both: English prose (one short
// document = one chunk = one input, emu/embed-small) and multilingual.mjs's hostile pieces (one
// chunk each in emu/embed-large's budget, 1,536 dims). `write(path, documents)` writes that many.
import { writeJsonlCorpus } from './lib.mjs';
import { writeMultilingualCorpus } from './multilingual.mjs';

export const CORPORA = {
  prose: {
    model: 'emu/embed-small',
    write: (path, documents) => writeJsonlCorpus(path, Infinity, 60, { maxDocuments: documents }),
  },
  multilingual: {
    model: 'emu/embed-large',
    write: (path, documents) => writeMultilingualCorpus(path, Infinity, { maxDocuments: documents }),
  },
};

/** The corpus of `kind`; an unknown kind names the known ones. */
export function corpusOf(kind) {
  const corpus = CORPORA[kind];
  if (!corpus) throw new Error(`unknown corpus kind ${kind}; known: ${Object.keys(CORPORA).join(', ')}`);
  return corpus;
}
