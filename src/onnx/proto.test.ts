/** The ONNX proto subset: exact wire bytes for hand-computed messages (field numbers of onnx.proto), round trips, decode errors. */
import { describe, expect, test } from 'vitest';
import {
  attr,
  decodeModel,
  encodeModel,
  floatTensor,
  int64Tensor,
  OnnxFormatError,
  tensorFloats,
  valueInfo,
  DataType,
  type ModelProto,
} from './proto';

const ascii = (s: string) => Array.from(s, (c) => c.charCodeAt(0));
const bytes = (m: ModelProto) => Array.from(encodeModel(m));

describe('wire format', () => {
  test('ModelProto fields: ir_version 1, opset_import 8 (domain 1, version 2), producer_name 2, metadata_props 14 (key 1, value 2)', () => {
    expect(bytes({ irVersion: 8 })).toEqual([0x08, 8]);
    expect(bytes({ opsetImport: [{ domain: '', version: 17 }] })).toEqual([0x42, 4, 0x0a, 0, 0x10, 17]);
    expect(bytes({ producerName: 'ab' })).toEqual([0x12, 2, ...ascii('ab')]);
    expect(bytes({ metadataProps: [{ key: 'k', value: 'v' }] })).toEqual([0x72, 6, 0x0a, 1, ...ascii('k'), 0x12, 1, ...ascii('v')]);
  });

  test('graph 7 > node 1 (input 1, output 2, op_type 4, attribute 5 (name 1, i 3, type 20))', () => {
    const a = [0x0a, 4, ...ascii('axis'), 0x18, 2, 0xa0, 0x01, 2];
    const node = [0x0a, 1, ...ascii('x'), 0x12, 1, ...ascii('y'), 0x22, 4, ...ascii('Relu'), 0x2a, a.length, ...a];
    const graph = [0x0a, node.length, ...node];
    expect(bytes({ graph: { node: [{ input: ['x'], output: ['y'], opType: 'Relu', attribute: [attr.int('axis', 2)] }] } })).toEqual([
      0x3a,
      graph.length,
      ...graph,
    ]);
  });

  test('initializer 5: dims 1 (unpacked), data_type 2, int64_data 7 (packed), name 8, raw_data 9', () => {
    const t = [0x08, 2, 0x10, DataType.INT64, 0x3a, 2, 5, 6, 0x42, 1, ...ascii('c')];
    expect(bytes({ graph: { initializer: [int64Tensor('c', [2], [5, 6])] } })).toEqual([0x3a, t.length + 2, 0x2a, t.length, ...t]);
    const f = [0x08, 1, 0x10, DataType.FLOAT, 0x42, 1, ...ascii('w'), 0x4a, 4, 0, 0, 0x80, 0x3f];
    expect(bytes({ graph: { initializer: [floatTensor('w', [1], Float32Array.of(1))] } })).toEqual([
      0x3a,
      f.length + 2,
      0x2a,
      f.length,
      ...f,
    ]);
  });

  test('input 11 / output 12: ValueInfoProto name 1, type 2 > tensor_type 1 (elem_type 1, shape 2 > dim 1 (dim_value 1, dim_param 2))', () => {
    const dims = [0x0a, 3, 0x12, 1, ...ascii('b'), 0x0a, 2, 0x08, 7];
    const shape = [0x12, dims.length, ...dims];
    const tensor = [0x08, DataType.INT64, ...shape];
    const type = [0x0a, tensor.length, ...tensor];
    const vi = [0x0a, 1, ...ascii('i'), 0x12, type.length, ...type];
    expect(bytes({ graph: { input: [valueInfo('i', DataType.INT64, ['b', 7])] } })).toEqual([0x3a, vi.length + 2, 0x5a, vi.length, ...vi]);
    expect(bytes({ graph: { output: [valueInfo('i', DataType.INT64, ['b', 7])] } })).toEqual([0x3a, vi.length + 2, 0x62, vi.length, ...vi]);
  });
});

describe('decode', () => {
  const model: ModelProto = {
    irVersion: 8,
    opsetImport: [{ domain: '', version: 17 }],
    producerName: 'test',
    graph: {
      name: 'g',
      node: [
        {
          input: ['x', 'w'],
          output: ['y'],
          opType: 'MatMul',
          name: 'mm',
          attribute: [attr.ints('perm', [1, 0]), attr.float('epsilon', 0.5), attr.string('mode', 'tanh')],
        },
      ],
      initializer: [floatTensor('w', [2, 2], Float32Array.of(1, -2, 3.5, 4))],
      input: [valueInfo('x', DataType.FLOAT, ['batch', 2])],
      output: [valueInfo('y', DataType.FLOAT, ['batch', 2])],
    },
    metadataProps: [{ key: 'a', value: 'b' }],
  };

  test('round trip: ints come back as numbers, raw_data as bytes', () => {
    const d = decodeModel(encodeModel(model));
    expect(d.irVersion).toBe(8);
    expect(d.opsetImport).toEqual([{ domain: '', version: 17 }]);
    expect(d.graph!.node![0]!.attribute!.map((a) => a.ints ?? a.f ?? new TextDecoder().decode(a.s))).toEqual([[1, 0], 0.5, 'tanh']);
    expect(Array.from(tensorFloats(d.graph!.initializer![0]!))).toEqual([1, -2, 3.5, 4]);
    expect(d.graph!.input![0]!.type!.tensorType!.shape!.dim).toEqual([{ dimParam: 'batch' }, { dimValue: 2 }]);
    expect(d.metadataProps).toEqual([{ key: 'a', value: 'b' }]);
  });

  test('a truncated file is an error naming the byte where decoding stopped', () => {
    const b = encodeModel(model);
    for (const cut of [b.length - 1, Math.floor(b.length / 2), 3]) {
      expect(() => decodeModel(b.subarray(0, cut))).toThrow(OnnxFormatError);
      expect(() => decodeModel(b.subarray(0, cut))).toThrow(/^truncated protobuf at byte \d+/);
    }
  });

  test('an invalid wire type is an error', () => {
    // field 15 (not in ModelProto) with wire type 7, which does not exist
    expect(() => decodeModel(Uint8Array.of(0x7f, 1, 2, 3))).toThrow(/invalid protobuf: invalid wire type 7 at offset 1/);
  });
});
