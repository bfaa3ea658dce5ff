/** Node's `WasmLoader`: reads the two wasm files from the installed packages. */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { WasmFile, WasmLoader } from './treesitter';

const PACKAGE_PATHS: Record<WasmFile, string> = {
  'web-tree-sitter.wasm': 'web-tree-sitter/web-tree-sitter.wasm',
  'tree-sitter-javascript.wasm': 'tree-sitter-javascript/tree-sitter-javascript.wasm',
};

export const nodeWasmLoader: WasmLoader = async (file) => {
  const require = createRequire(import.meta.url);
  return new Uint8Array(await readFile(require.resolve(PACKAGE_PATHS[file])));
};
