/**
 * Loading web-tree-sitter and the JavaScript grammar from bytes, the same way in Node and in the
 * browser: the caller supplies a `WasmLoader` (Node: read the files from node_modules, see
 * `wasm-node.ts`; browser: fetch the URLs Vite gives for `?url` imports, see `wasm-browser.ts`).
 * Nothing is fetched from the network.
 */
import { Language, Parser } from 'web-tree-sitter';

export type WasmFile = 'web-tree-sitter.wasm' | 'tree-sitter-javascript.wasm';
/** Returns the bytes of one of the two wasm files. */
export type WasmLoader = (file: WasmFile) => Promise<Uint8Array>;

let runtime: Promise<void> | null = null;

/** Initialises the tree-sitter runtime once (later calls reuse it) and loads the JS grammar. */
export async function loadJavaScript(load: WasmLoader): Promise<Language> {
  runtime ??= initRuntime(load);
  try {
    await runtime;
  } catch (e) {
    runtime = null; // let a later call retry, e.g. with another loader
    throw e;
  }
  return Language.load(await load('tree-sitter-javascript.wasm'));
}

async function initRuntime(load: WasmLoader): Promise<void> {
  const bytes = await load('web-tree-sitter.wasm');
  const wasmBinary = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  // The bytes are handed over directly, so the runtime never looks for a file or a URL.
  await Parser.init({ wasmBinary, locateFile: (name: string) => name });
}
