/**
 * Thrift's compact protocol as a lossless tree: every field keeps its id and wire type, so a struct
 * read and written back is the same bytes. Parquet's footer and page headers are written in it
 * (parquet-part-writer.ts, parquet-format.ts); the tests read footers back through it.
 */

/** The compact protocol's type codes (a field's boolean value is its type: True or False). */
export const WireType = {
  True: 1,
  False: 2,
  Byte: 3,
  I16: 4,
  I32: 5,
  I64: 6,
  Double: 7,
  Binary: 8,
  List: 9,
  Set: 10,
  Struct: 12,
} as const;
export type WireType = (typeof WireType)[keyof typeof WireType];

export type ThriftValue = boolean | number | bigint | Uint8Array | ThriftList | ThriftStruct;

export interface ThriftList {
  readonly elementType: WireType;
  readonly items: ThriftValue[];
}

export interface ThriftField {
  readonly id: number;
  readonly type: WireType;
  value: ThriftValue;
}

/** Fields in wire order; ids ascend in what Parquet writers write, and must here. */
export interface ThriftStruct {
  readonly fields: ThriftField[];
}

/** A struct from `[id, type, value]` triples; undefined values are left out. */
export function struct(...fields: [number, WireType, ThriftValue | undefined][]): ThriftStruct {
  return {
    fields: fields
      .filter((f): f is [number, WireType, ThriftValue] => f[2] !== undefined)
      .map(([id, type, value]) => ({ id, type, value })),
  };
}

/** Reads one struct from `bytes` at `offset`; `end` is where it stopped. */
export function readStruct(bytes: Uint8Array, offset = 0): { struct: ThriftStruct; end: number } {
  const reader = new Reader(bytes, offset);
  const value = reader.struct();
  return { struct: value, end: reader.offset };
}

export function writeStruct(value: ThriftStruct): Uint8Array {
  const writer = new Writer();
  writer.struct(value);
  return writer.bytes();
}

class Reader {
  constructor(
    private readonly buffer: Uint8Array,
    public offset: number,
  ) {}

  struct(): ThriftStruct {
    const fields: ThriftField[] = [];
    let last = 0;
    for (;;) {
      const header = this.byte();
      if (header === 0) return { fields };
      const type = (header & 0x0f) as WireType;
      const delta = header >> 4;
      const id = delta === 0 ? this.zigzag32() : last + delta;
      last = id;
      const value =
        type === WireType.True || type === WireType.False ? type === WireType.True : this.value(type);
      fields.push({ id, type, value });
    }
  }

  private value(type: WireType): ThriftValue {
    switch (type) {
      case WireType.Byte:
        return (this.byte() << 24) >> 24;
      case WireType.I16:
      case WireType.I32:
        return this.zigzag32();
      case WireType.I64:
        return this.zigzag64();
      case WireType.Double: {
        const view = new DataView(this.buffer.buffer, this.buffer.byteOffset + this.offset, 8);
        this.offset += 8;
        return view.getFloat64(0, true);
      }
      case WireType.Binary: {
        const length = this.varint();
        if (this.offset + length > this.buffer.length) throw new Error('thrift: binary past the end');
        const value = this.buffer.slice(this.offset, this.offset + length);
        this.offset += length;
        return value;
      }
      case WireType.List:
      case WireType.Set: {
        const header = this.byte();
        const elementType = (header & 0x0f) as WireType;
        const size = header >> 4 === 15 ? this.varint() : header >> 4;
        const items: ThriftValue[] = [];
        for (let i = 0; i < size; i++) {
          // A boolean in a list is a byte of its own (1 true).
          items.push(
            elementType === WireType.True || elementType === WireType.False
              ? this.byte() === 1
              : this.value(elementType),
          );
        }
        return { elementType, items };
      }
      case WireType.Struct:
        return this.struct();
      default:
        throw new Error(`thrift: unsupported wire type ${type}`);
    }
  }

  private byte(): number {
    if (this.offset >= this.buffer.length) throw new Error('thrift: read past the end');
    return this.buffer[this.offset++]!;
  }

  private varint(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      const b = this.byte();
      result += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return result;
      shift += 7;
      if (shift > 49) throw new Error('thrift: varint too long');
    }
  }

  private zigzag32(): number {
    const n = this.varint();
    return n % 2 === 0 ? n / 2 : -(n + 1) / 2;
  }

  private zigzag64(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = BigInt(this.byte());
      result |= (b & 0x7fn) << shift;
      if ((b & 0x80n) === 0n) return (result >> 1n) ^ -(result & 1n);
      shift += 7n;
      if (shift > 70n) throw new Error('thrift: varint too long');
    }
  }
}

class Writer {
  private buffer = new Uint8Array(1024);
  private length = 0;

  bytes(): Uint8Array {
    return this.buffer.slice(0, this.length);
  }

  struct(value: ThriftStruct): void {
    let last = 0;
    for (const { id, type, value: fieldValue } of value.fields) {
      const wire =
        type === WireType.True || type === WireType.False
          ? fieldValue
            ? WireType.True
            : WireType.False
          : type;
      const delta = id - last;
      if (delta > 0 && delta <= 15) this.byte((delta << 4) | wire);
      else {
        this.byte(wire);
        this.zigzag32(id);
      }
      last = id;
      if (wire !== WireType.True && wire !== WireType.False) this.value(type, fieldValue);
    }
    this.byte(0);
  }

  private value(type: WireType, value: ThriftValue): void {
    switch (type) {
      case WireType.Byte:
        this.byte(Number(value) & 0xff);
        return;
      case WireType.I16:
      case WireType.I32:
        this.zigzag32(Number(value));
        return;
      case WireType.I64:
        this.zigzag64(BigInt(value as number | bigint));
        return;
      case WireType.Double: {
        this.reserve(8);
        new DataView(this.buffer.buffer).setFloat64(this.length, Number(value), true);
        this.length += 8;
        return;
      }
      case WireType.Binary: {
        const bytes = value as Uint8Array;
        this.varint(bytes.length);
        this.reserve(bytes.length);
        this.buffer.set(bytes, this.length);
        this.length += bytes.length;
        return;
      }
      case WireType.List:
      case WireType.Set: {
        const { elementType, items } = value as ThriftList;
        if (items.length < 15) this.byte((items.length << 4) | elementType);
        else {
          this.byte(0xf0 | elementType);
          this.varint(items.length);
        }
        for (const item of items) {
          if (elementType === WireType.True || elementType === WireType.False) this.byte(item ? 1 : 2);
          else this.value(elementType, item);
        }
        return;
      }
      case WireType.Struct:
        this.struct(value as ThriftStruct);
        return;
      default:
        throw new Error(`thrift: unsupported wire type ${type}`);
    }
  }

  private reserve(more: number): void {
    if (this.length + more <= this.buffer.length) return;
    const grown = new Uint8Array(Math.max(this.buffer.length * 2, this.length + more));
    grown.set(this.buffer.subarray(0, this.length));
    this.buffer = grown;
  }

  private byte(b: number): void {
    this.reserve(1);
    this.buffer[this.length++] = b;
  }

  private varint(n: number): void {
    let rest = n;
    while (rest >= 0x80) {
      this.byte((rest % 0x80) | 0x80);
      rest = Math.floor(rest / 0x80);
    }
    this.byte(rest);
  }

  private zigzag32(n: number): void {
    this.varint(n >= 0 ? n * 2 : -n * 2 - 1);
  }

  private zigzag64(n: bigint): void {
    let rest = n >= 0n ? n << 1n : (-n << 1n) - 1n;
    while (rest >= 0x80n) {
      this.byte(Number(rest & 0x7fn) | 0x80);
      rest >>= 7n;
    }
    this.byte(Number(rest));
  }
}
