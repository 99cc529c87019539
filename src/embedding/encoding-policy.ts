/**
 * Which `encoding_format` to ask for. base64 is a third of the bytes of float JSON and far cheaper
 * to decode, but some providers answer base64 requests with empty `data`: after a few such answers
 * the run switches to `float` for good (floats are accepted whatever was asked).
 */
export class EncodingPolicy {
  #current: 'base64' | 'float';
  #emptyBase64Answers = 0;
  readonly #switchAfter: number;

  constructor(initial: 'base64' | 'float', options: { switchAfter?: number } = {}) {
    this.#current = initial;
    this.#switchAfter = options.switchAfter ?? 2;
  }

  get current(): 'base64' | 'float' {
    return this.#current;
  }

  /** An empty `data` came back. Returns true when this switched the run to float. */
  noteEmptyAnswer(askedFor: 'base64' | 'float'): boolean {
    if (askedFor !== 'base64' || this.#current !== 'base64') return false;
    this.#emptyBase64Answers += 1;
    if (this.#emptyBase64Answers < this.#switchAfter) return false;
    this.#current = 'float';
    return true;
  }
}
