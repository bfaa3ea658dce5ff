/** Byte-level BPE for code: training, encoding, decoding (batch and streaming), JSON. */
export { Tokenizer, type EncodeOptions, EOS, PAD, MIN_VOCAB, MAX_VOCAB } from './tokenizer';
export { trainTokenizer, type TrainOptions } from './train';
export { StreamDecoder } from './decoder';
export { type TokenizerJSON, SUPPORTED_TOKENIZER_VERSIONS } from './json';
export { pretokenize, PRETOKENIZER_NAME, MAX_CHUNK_UNITS } from './pretokenize';
export { wtf8Encode, wtf8Decode } from './wtf8';
