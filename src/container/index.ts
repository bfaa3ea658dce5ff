/**
 * Checkpoint container: encode/decode, CRC-32 and compatibility checks. Storage lives apart so
 * that neither side bundles the other: `./node` (files) and `./browser` (OPFS / IndexedDB).
 */
export {
  encodeCheckpoint,
  decodeCheckpoint,
  CHECKPOINT_MAGIC,
  CHECKPOINT_VERSION,
  SUPPORTED_CHECKPOINT_VERSIONS,
  type CheckpointInput,
  type DecodedCheckpoint,
  type DecodedTensor,
  type TensorData,
  type TensorInput,
} from './format';
export { CheckpointError, type CheckpointHeader, type Dtype, type TensorEntry } from './header';
export { checkCompatible, assertCompatible, type CompatExpectation, type Compatibility } from './compat';
export { crc32, crc32Update } from './crc32';
