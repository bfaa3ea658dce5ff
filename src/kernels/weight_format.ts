/**
 * How a frozen weight is stored on the GPU: 'f32' (one float per element), or 16 bits per element,
 * 'f16' (IEEE half) or 'bf16' (bfloat16), two elements to a u32 word. A LoRA base is frozen, so
 * its weights can stay in the checkpoint's own 16-bit dtype: half the memory, and exactly the
 * numbers the checkpoint holds (SmolLM2 and Qwen2.5 ship BF16; widening them to f32 on load is
 * exact, and so is packing them back).
 *
 * The shaders read a packed weight with core WGSL only (unpack2x16float for f16, a shift and a
 * bitcast for bf16), so 16-bit storage works on every adapter, with or without `shader-f16`.
 * Arithmetic stays f32: the element is widened as it is read. Element i of a tensor (row-major,
 * flat) is the low half of word i >> 1 when i is even, the high half when odd; an odd count pads
 * the last word with 0.
 *
 * A kernel that reads a weight this way appends `weightReader(name, binding, format)` to its WGSL:
 * the binding's declaration and `fn <name>At(i: u32) -> f32`.
 */
import { bf16ToF32, f16ToF32, f32ToBf16Bits, f32ToF16Bits } from '../util/half';

export type WeightFormat = 'f32' | 'f16' | 'bf16';

export const WEIGHT_FORMATS: readonly WeightFormat[] = ['f32', 'f16', 'bf16'];

/** Bytes a tensor of n elements takes in a format (16-bit: whole u32 words). */
export function weightBytes(n: number, format: WeightFormat): number {
  return format === 'f32' ? 4 * n : 4 * Math.ceil(n / 2);
}

/**
 * The words to upload for `data` in a 16-bit format, rounded to nearest even. Throws, naming the
 * tensor and the element, when a value is not finite after rounding (F16 overflows past 65504).
 */
export function packWeights(data: ArrayLike<number>, format: 'f16' | 'bf16', name: string): Uint32Array<ArrayBuffer> {
  const narrow = format === 'f16' ? f32ToF16Bits : f32ToBf16Bits;
  const out = new Uint32Array(Math.ceil(data.length / 2));
  for (let i = 0; i < data.length; i++) {
    const h = narrow(data[i]!);
    if ((h & 0x7fff) >= (format === 'f16' ? 0x7c00 : 0x7f80)) {
      throw new Error(
        `${name}: element ${i} (${data[i]}) is not a finite ${format.toUpperCase()} number` +
          (format === 'f16' && Number.isFinite(data[i]) ? ' (F16 stops at 65504; use "bf16" or "f32" for this model)' : ''),
      );
    }
    out[i >> 1]! |= i & 1 ? h << 16 : h;
  }
  return out;
}

/** The numbers a packed tensor of n elements holds (what the shaders read), for references and checks. */
export function unpackWeights(words: Uint32Array, n: number, format: 'f16' | 'bf16'): Float32Array {
  const widen = format === 'f16' ? f16ToF32 : bf16ToF32;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = widen((words[i >> 1]! >>> (i & 1 ? 16 : 0)) & 0xffff);
  return out;
}

/** data rounded to a format and widened back: the values a GPU weight in that format holds. */
export function roundWeights(data: Float32Array, format: WeightFormat, name: string): Float32Array {
  return format === 'f32' ? data : unpackWeights(packWeights(data, format, name), data.length, format);
}

/**
 * WGSL for a read-only weight binding in a format: `var<storage, read> <name>` at @binding(b) and
 * `fn <name>At(i: u32) -> f32`, element i widened to f32.
 */
export function weightReader(name: string, binding: number, format: WeightFormat): string {
  const decl = `@group(0) @binding(${binding}) var<storage, read> ${name}: array<${format === 'f32' ? 'f32' : 'u32'}>;`;
  // four at a time from scalar reads, so a kernel may call either reader's functions
  const at4 = `fn ${name}At4(j: u32) -> vec4f {\n  let i = 4u * j;\n  return vec4f(${name}At(i), ${name}At(i + 1u), ${name}At(i + 2u), ${name}At(i + 3u));\n}\n`;
  if (format === 'f32') return `\n${decl}\nfn ${name}At(i: u32) -> f32 {\n  return ${name}[i];\n}\n${at4}`;
  const body = format === 'f16' ? `unpack2x16float(w)[i & 1u]` : `bitcast<f32>(select(w << 16u, w & 0xffff0000u, (i & 1u) == 1u))`;
  return `\n${decl}\nfn ${name}At(i: u32) -> f32 {\n  let w = ${name}[i >> 1u];\n  return ${body};\n}\n${at4}`;
}

/**
 * As weightReader, four elements a load, for a tensor of a multiple of 4 elements read in aligned
 * fours: the binding as vec4 of f32 or vec2 of packed words, and `fn <name>At4(j: u32) -> vec4f`,
 * elements 4j..4j+3 (words 2j and 2j + 1 of a 16-bit format, low half first); `<name>At(i)` too.
 * (weightReader gives both functions as well, At4 from four scalar reads.)
 */
export function weightReader4(name: string, binding: number, format: WeightFormat): string {
  const decl = `@group(0) @binding(${binding}) var<storage, read> ${name}: array<${format === 'f32' ? 'vec4f' : 'vec2u'}>;`;
  // one element from the vector binding, so a kernel may call either reader's functions
  const at = `fn ${name}At(i: u32) -> f32 {\n  return ${name}At4(i >> 2u)[i & 3u];\n}\n`;
  if (format === 'f32') return `\n${decl}\nfn ${name}At4(j: u32) -> vec4f {\n  return ${name}[j];\n}\n${at}`;
  const body =
    format === 'f16'
      ? 'vec4f(unpack2x16float(w.x), unpack2x16float(w.y))'
      : 'vec4f(bitcast<f32>(w.x << 16u), bitcast<f32>(w.x & 0xffff0000u), bitcast<f32>(w.y << 16u), bitcast<f32>(w.y & 0xffff0000u))';
  return `\n${decl}\nfn ${name}At4(j: u32) -> vec4f {\n  let w = ${name}[j];\n  return ${body};\n}\n${at}`;
}

/** The spec name of a kernel variant reading its weight in `format` ('f32' keeps the plain name). */
export function formatName(name: string, format: WeightFormat): string {
  return format === 'f32' ? name : `${name}_${format}`;
}

/** Throws unless `f` is a weight format (`what` names the setting). */
export function checkWeightFormat(f: unknown, what: string): asserts f is WeightFormat {
  if (!WEIGHT_FORMATS.includes(f as WeightFormat))
    throw new Error(`${what}: expected one of ${WEIGHT_FORMATS.join(', ')}, got ${JSON.stringify(f)}`);
}
