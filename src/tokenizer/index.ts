/** Byte-level BPE for code: training, encoding, decoding (batch and streaming), JSON. */
export { Tokenizer, type EncodeOptions, EOS, PAD, MIN_VOCAB, MAX_VOCAB } from './tokenizer';
export { trainTokenizer, type TrainOptions } from './train';
export { StreamDecoder } from './decoder';
export { type TokenizerJSON, SUPPORTED_TOKENIZER_VERSIONS } from './json';
export { pretokenize, PRETOKENIZER_NAME, MAX_CHUNK_UNITS } from './pretokenize';
export { wtf8Encode, wtf8Decode } from './wtf8';
/** What the lab needs from any tokenizer, and Hugging Face's (tokenizer.json, chat templates). */
export type { TextTokenizer, TokenStreamDecoder } from './types';
export { HfTokenizer, HfTokenizerError, type HfTokenizerFiles, type HfEncodeOptions, type HfSpecialTokens } from './hf';
export { renderChat, chatTemplateOf, hasChatTemplate, ChatTemplateError, type ChatMessage, type RenderChatOptions } from './chat';
export { labTokenizerToHf, hfEncodesLikeLab, type LabHfFiles } from './export-hf';
