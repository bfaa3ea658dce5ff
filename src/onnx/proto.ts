/**
 * The subset of ONNX's protobuf schema (onnx/onnx.proto, proto2) this project reads and writes,
 * as a protobufjs JSON descriptor, with typed encode/decode helpers. Field numbers are those of
 * onnx.proto; field names are its names in camelCase (the wire format only knows the numbers).
 * Fields outside the subset (functions, training_info, sparse tensors, ...) are skipped when
 * decoding. Repeated scalars are written unpacked (proto2's default) except TensorProto's *_data
 * fields, which onnx.proto declares [packed = true]; both are stated explicitly because a JSON root
 * would pack them all. Decoding accepts either form, as every protobuf reader must.
 */
import protobuf from 'protobufjs';
import { errorText } from '../util/errors';

/** TensorProto.DataType values used here. */
export const DataType = { FLOAT: 1, UINT8: 2, INT8: 3, INT32: 6, INT64: 7, STRING: 8, BOOL: 9, FLOAT16: 10, DOUBLE: 11 } as const;

/** Names of TensorProto.DataType values, for error messages. */
export const DATA_TYPE_NAMES: Record<number, string> = {
  0: 'undefined',
  1: 'float',
  2: 'uint8',
  3: 'int8',
  4: 'uint16',
  5: 'int16',
  6: 'int32',
  7: 'int64',
  8: 'string',
  9: 'bool',
  10: 'float16',
  11: 'double',
  12: 'uint32',
  13: 'uint64',
  14: 'complex64',
  15: 'complex128',
  16: 'bfloat16',
};

/** AttributeProto.AttributeType values used here. */
export const AttrType = { FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, GRAPH: 5, FLOATS: 6, INTS: 7, STRINGS: 8 } as const;

export interface StringStringEntry {
  key?: string;
  value?: string;
}
export interface OperatorSetId {
  domain?: string;
  version?: number;
}
export interface Dimension {
  dimValue?: number;
  dimParam?: string;
  denotation?: string;
}
export interface TensorShape {
  dim?: Dimension[];
}
export interface TypeProto {
  tensorType?: { elemType?: number; shape?: TensorShape };
  denotation?: string;
}
export interface ValueInfo {
  name?: string;
  type?: TypeProto;
  docString?: string;
}

export interface TensorProto {
  dims?: number[];
  dataType?: number;
  floatData?: number[];
  int32Data?: number[];
  int64Data?: number[];
  name?: string;
  docString?: string;
  rawData?: Uint8Array;
  doubleData?: number[];
}

export interface AttributeProto {
  name?: string;
  type?: number;
  f?: number;
  i?: number;
  s?: Uint8Array;
  t?: TensorProto;
  g?: GraphProto;
  floats?: number[];
  ints?: number[];
  strings?: Uint8Array[];
  docString?: string;
}

export interface NodeProto {
  input?: string[];
  output?: string[];
  name?: string;
  opType?: string;
  domain?: string;
  attribute?: AttributeProto[];
  docString?: string;
}

export interface GraphProto {
  node?: NodeProto[];
  name?: string;
  initializer?: TensorProto[];
  docString?: string;
  input?: ValueInfo[];
  output?: ValueInfo[];
  valueInfo?: ValueInfo[];
}

export interface ModelProto {
  irVersion?: number;
  opsetImport?: OperatorSetId[];
  producerName?: string;
  producerVersion?: string;
  domain?: string;
  modelVersion?: number;
  docString?: string;
  graph?: GraphProto;
  metadataProps?: StringStringEntry[];
}

const f = (type: string, id: number) => ({ type, id });
/** A repeated field; scalars say packed or not explicitly (proto2: unpacked unless [packed = true]). */
const rep = (type: string, id: number, packed?: boolean) => ({
  rule: 'repeated',
  type,
  id,
  ...(packed !== undefined ? { options: { packed } } : {}),
});

/** protobufjs JSON descriptor of the subset; ids from onnx.proto. */
export const ONNX_DESCRIPTOR = {
  nested: {
    onnx: {
      nested: {
        AttributeProto: {
          fields: {
            name: f('string', 1),
            refAttrName: f('string', 21),
            docString: f('string', 13),
            type: f('int32', 20),
            f: f('float', 2),
            i: f('int64', 3),
            s: f('bytes', 4),
            t: f('TensorProto', 5),
            g: f('GraphProto', 6),
            floats: rep('float', 7, false),
            ints: rep('int64', 8, false),
            strings: rep('bytes', 9),
            tensors: rep('TensorProto', 10),
            graphs: rep('GraphProto', 11),
          },
        },
        ValueInfoProto: { fields: { name: f('string', 1), type: f('TypeProto', 2), docString: f('string', 3) } },
        NodeProto: {
          fields: {
            input: rep('string', 1),
            output: rep('string', 2),
            name: f('string', 3),
            opType: f('string', 4),
            domain: f('string', 7),
            attribute: rep('AttributeProto', 5),
            docString: f('string', 6),
          },
        },
        ModelProto: {
          fields: {
            irVersion: f('int64', 1),
            opsetImport: rep('OperatorSetIdProto', 8),
            producerName: f('string', 2),
            producerVersion: f('string', 3),
            domain: f('string', 4),
            modelVersion: f('int64', 5),
            docString: f('string', 6),
            graph: f('GraphProto', 7),
            metadataProps: rep('StringStringEntryProto', 14),
          },
        },
        StringStringEntryProto: { fields: { key: f('string', 1), value: f('string', 2) } },
        GraphProto: {
          fields: {
            node: rep('NodeProto', 1),
            name: f('string', 2),
            initializer: rep('TensorProto', 5),
            docString: f('string', 10),
            input: rep('ValueInfoProto', 11),
            output: rep('ValueInfoProto', 12),
            valueInfo: rep('ValueInfoProto', 13),
          },
        },
        TensorProto: {
          fields: {
            dims: rep('int64', 1, false),
            dataType: f('int32', 2),
            floatData: rep('float', 4, true),
            int32Data: rep('int32', 5, true),
            stringData: rep('bytes', 6),
            int64Data: rep('int64', 7, true),
            name: f('string', 8),
            docString: f('string', 12),
            rawData: f('bytes', 9),
            doubleData: rep('double', 10, true),
            uint64Data: rep('uint64', 11, true),
          },
        },
        TensorShapeProto: {
          fields: { dim: rep('Dimension', 1) },
          nested: {
            Dimension: {
              oneofs: { value: { oneof: ['dimValue', 'dimParam'] } },
              fields: { dimValue: f('int64', 1), dimParam: f('string', 2), denotation: f('string', 3) },
            },
          },
        },
        TypeProto: {
          oneofs: { value: { oneof: ['tensorType'] } },
          fields: { tensorType: f('Tensor', 1), denotation: f('string', 6) },
          nested: { Tensor: { fields: { elemType: f('int32', 1), shape: f('TensorShapeProto', 2) } } },
        },
        OperatorSetIdProto: { fields: { domain: f('string', 1), version: f('int64', 2) } },
      },
    },
  },
};

let modelType: protobuf.Type | null = null;

function modelProtoType(): protobuf.Type {
  modelType ??= protobuf.Root.fromJSON(ONNX_DESCRIPTOR).lookupType('onnx.ModelProto');
  return modelType;
}

/** A file that is not a ModelProto; the message says where decoding stopped. */
export class OnnxFormatError extends Error {
  override readonly name = 'OnnxFormatError';
}

export function encodeModel(model: ModelProto): Uint8Array {
  const T = modelProtoType();
  return T.encode(T.fromObject(model as Record<string, unknown>)).finish();
}

/**
 * Decodes a ModelProto. Wire errors become OnnxFormatError: "truncated protobuf at byte N" for a
 * file that ends inside a field, the decoder's own message otherwise. int64 fields come back as
 * numbers.
 */
export function decodeModel(bytes: Uint8Array): ModelProto {
  const T = modelProtoType();
  const reader = protobuf.Reader.create(bytes);
  let msg: protobuf.Message;
  try {
    msg = T.decode(reader);
  } catch (e) {
    const m = errorText(e);
    // the reader stops where the data ran out: a field or nested message longer than the rest of the file
    if (e instanceof RangeError && m.startsWith('index out of range'))
      throw new OnnxFormatError(`truncated protobuf at byte ${reader.pos} (the file has ${bytes.length} bytes)`);
    throw new OnnxFormatError(`invalid protobuf: ${m}`);
  }
  return T.toObject(msg, { longs: Number, arrays: false, defaults: false }) as ModelProto;
}

const LITTLE_ENDIAN = new Uint8Array(new Float32Array([1]).buffer)[3] === 0x3f;

/** A tensor initializer from float32 data (raw little-endian bytes, the compact form). */
export function floatTensor(name: string, dims: readonly number[], data: Float32Array): TensorProto {
  const n = dims.reduce((a, b) => a * b, 1);
  if (data.length !== n) throw new Error(`floatTensor ${name}: ${data.length} values for dims [${dims.join(', ')}]`);
  if (!LITTLE_ENDIAN) throw new Error('floatTensor: raw_data is little-endian; big-endian hosts are not supported');
  const raw = new Uint8Array(Float32Array.from(data).buffer);
  return { name, dims: [...dims], dataType: DataType.FLOAT, rawData: raw };
}

/** A small int64 tensor (shapes, axes, indices). */
export function int64Tensor(name: string, dims: readonly number[], data: readonly number[]): TensorProto {
  return { name, dims: [...dims], dataType: DataType.INT64, int64Data: [...data] };
}

/** Attribute constructors. */
export const attr = {
  int: (name: string, i: number): AttributeProto => ({ name, type: AttrType.INT, i }),
  float: (name: string, v: number): AttributeProto => ({ name, type: AttrType.FLOAT, f: v }),
  ints: (name: string, ints: number[]): AttributeProto => ({ name, type: AttrType.INTS, ints }),
  string: (name: string, s: string): AttributeProto => ({ name, type: AttrType.STRING, s: new TextEncoder().encode(s) }),
  tensor: (name: string, t: TensorProto): AttributeProto => ({ name, type: AttrType.TENSOR, t }),
};

/** A tensor value's declaration: elem type and dims (numbers fixed, strings symbolic). */
export function valueInfo(name: string, elemType: number, dims: readonly (number | string)[]): ValueInfo {
  return {
    name,
    type: { tensorType: { elemType, shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) } } },
  };
}

/** The float32 values of an initializer (raw_data or float_data). */
export function tensorFloats(t: TensorProto): Float32Array {
  if (t.dataType !== DataType.FLOAT)
    throw new Error(`tensor ${t.name}: expected float, got ${DATA_TYPE_NAMES[t.dataType ?? 0] ?? t.dataType}`);
  if (t.rawData && t.rawData.length) {
    const copy = new Uint8Array(t.rawData.length); // aligned, and not a view of a shared (Node Buffer) pool
    copy.set(t.rawData);
    return new Float32Array(copy.buffer);
  }
  return Float32Array.from(t.floatData ?? []);
}

/** "name: float[batch, sequence, 512]", for messages. */
export function describeValue(v: ValueInfo): string {
  const tt = v.type?.tensorType;
  if (!tt) return `${v.name}: (not a tensor)`;
  const dims = tt.shape?.dim?.map((d) => (d.dimValue !== undefined ? String(d.dimValue) : d.dimParam || '?'));
  return `${v.name}: ${DATA_TYPE_NAMES[tt.elemType ?? 0] ?? `type ${tt.elemType}`}${dims ? `[${dims.join(', ')}]` : '[?]'}`;
}
