/**
 * The browser's `WasmLoader`: Vite copies both wasm files into the build (`?url` imports) and
 * this fetches them from the app's own origin; nothing comes from a CDN.
 */
import runtimeUrl from 'web-tree-sitter/web-tree-sitter.wasm?url';
import javascriptUrl from 'tree-sitter-javascript/tree-sitter-javascript.wasm?url';
import type { WasmFile, WasmLoader } from './treesitter';

export const BROWSER_WASM_URLS: Record<WasmFile, string> = {
  'web-tree-sitter.wasm': runtimeUrl,
  'tree-sitter-javascript.wasm': javascriptUrl,
};

export const browserWasmLoader: WasmLoader = async (file) => {
  const response = await fetch(BROWSER_WASM_URLS[file]);
  if (!response.ok) throw new Error(`could not load ${file} from ${BROWSER_WASM_URLS[file]}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
};
