/** sha256 (hex) and size of a file's bytes as one read took them, from its first byte to its end. */
export interface WholeRead {
  readonly sha256: string;
  readonly bytes: number;
}
