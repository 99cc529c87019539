/**
 * Whether every value of a vector is finite, by one sum: float32 values summed as doubles cannot
 * overflow (|x| < 3.5e38), so the sum is finite exactly when every value is (an Infinity or a NaN
 * makes it Infinity or NaN). Four running sums, because one is a chain of dependent adds: measured
 * faster than a test per value (docs/benchmarks.md, "Design figures"). Shared by the answers' decoder and
 * `verify --deep`.
 */
export function allFinite(vector: Float32Array): boolean {
  let a = 0;
  let b = 0;
  let c = 0;
  let d = 0;
  const whole = vector.length - (vector.length % 4);
  let i = 0;
  for (; i < whole; i += 4) {
    a += vector[i]!;
    b += vector[i + 1]!;
    c += vector[i + 2]!;
    d += vector[i + 3]!;
  }
  for (; i < vector.length; i++) a += vector[i]!;
  return Number.isFinite(a + b + c + d);
}
