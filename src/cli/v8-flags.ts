/**
 * V8 flags the CLI sets for itself, at run time and before any command's code is compiled. The
 * bundle's loader (bundle-loader.ts) imports this before it compiles the bundle: a V8 code cache
 * is accepted only under the flags it was made with.
 */
import { setFlagsFromString } from 'node:v8';

// Wasm (parquet-wasm) stays on V8's baseline compiler, Liftoff. Tiering its hot functions up to
// TurboFan took ~0.35 CPU s a run on V8's background threads, more than the faster code gave back
// in runs of 50,000 to 250,000 vectors (docs/benchmarks.md, "Wasm on Liftoff alone"). Set before
// any command loads a wasm module.
setFlagsFromString('--liftoff-only');
// JavaScript tiers up to TurboFan later: a function must run ~9× more bytecode first. A run's code
// meets new shapes for its first seconds (calibration, the first answers, the first commit), and
// at V8's default budget TurboFan compiled and recompiled it all on the core the run shares with
// it; Sparkplug's baseline code holds meanwhile (docs/benchmarks.md, "TurboFan later").
setFlagsFromString('--interrupt-budget=600000');
