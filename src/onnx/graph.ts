/**
 * A small ONNX graph builder over the proto subset: nodes with generated value names,
 * initializers, constants, graph inputs/outputs, and the ModelProto around them. The exporter
 * (export.ts) and the tests' hand-written models use it.
 */
import {
  attr,
  floatTensor,
  int64Tensor,
  valueInfo,
  type AttributeProto,
  type ModelProto,
  type NodeProto,
  type StringStringEntry,
  type TensorProto,
  type ValueInfo,
} from './proto';

/** ONNX opset of the graphs written here (LayerNormalization needs 17). */
export const OPSET = 17;
/** IR version that goes with opset 17. */
export const IR_VERSION = 8;

export class GraphBuilder {
  readonly nodes: NodeProto[] = [];
  readonly initializers: TensorProto[] = [];
  readonly inputs: ValueInfo[] = [];
  readonly outputs: ValueInfo[] = [];
  private count = 0;
  private readonly consts = new Map<string, string>();

  /** A fresh value name with a readable prefix. */
  name(prefix: string): string {
    return `${prefix}_${this.count++}`;
  }

  /** Adds one node; returns its outputs (named `out`, or generated from the op type). */
  op(opType: string, inputs: string[], opts: { attrs?: AttributeProto[]; out?: string | string[]; prefix?: string } = {}): string {
    return this.opN(opType, inputs, { ...opts, outputs: typeof opts.out === 'string' ? [opts.out] : (opts.out ?? 1) })[0]!;
  }

  opN(opType: string, inputs: string[], opts: { attrs?: AttributeProto[]; outputs: number | string[]; prefix?: string }): string[] {
    const base = opts.prefix ? `${opts.prefix}/${opType}` : opType;
    const output = typeof opts.outputs === 'number' ? Array.from({ length: opts.outputs }, () => this.name(base)) : opts.outputs;
    this.nodes.push({ opType, input: inputs, output, name: this.name(`${base}_node`), attribute: opts.attrs ?? [] });
    return output;
  }

  initializer(t: TensorProto): string {
    this.initializers.push(t);
    return t.name!;
  }

  weight(name: string, dims: readonly number[], data: Float32Array): string {
    return this.initializer(floatTensor(name, dims, data));
  }

  /** An int64 constant (shared by value). */
  i64(values: readonly number[], dims: readonly number[] = [values.length]): string {
    const key = `i64:${dims.join('x')}:${values.join(',')}`;
    let n = this.consts.get(key);
    if (!n) {
      n = this.name('const_i64');
      this.initializer(int64Tensor(n, dims, values));
      this.consts.set(key, n);
    }
    return n;
  }

  /** A float32 scalar constant (shared by value). */
  f32(value: number): string {
    const key = `f32:${value}`;
    let n = this.consts.get(key);
    if (!n) {
      n = this.name('const_f32');
      this.initializer(floatTensor(n, [], Float32Array.of(value)));
      this.consts.set(key, n);
    }
    return n;
  }

  input(name: string, elemType: number, dims: readonly (number | string)[]): string {
    this.inputs.push(valueInfo(name, elemType, dims));
    return name;
  }

  output(name: string, elemType: number, dims: readonly (number | string)[]): string {
    this.outputs.push(valueInfo(name, elemType, dims));
    return name;
  }

  model(o: { graphName: string; metadata?: Record<string, string>; docString?: string; producer?: string }): ModelProto {
    const metadataProps: StringStringEntry[] = Object.entries(o.metadata ?? {}).map(([key, value]) => ({ key, value }));
    return {
      irVersion: IR_VERSION,
      opsetImport: [{ domain: '', version: OPSET }],
      producerName: o.producer ?? 'coderl',
      producerVersion: '0.1.0',
      docString: o.docString ?? '',
      graph: { name: o.graphName, node: this.nodes, initializer: this.initializers, input: this.inputs, output: this.outputs },
      metadataProps,
    };
  }
}

export { attr };
