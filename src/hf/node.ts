/** A model folder on disk (the CLI's `--model DIR`). */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelFolder } from './folder';

export async function nodeFolder(dir: string): Promise<ModelFolder> {
  let s;
  try {
    s = await stat(dir);
  } catch (e) {
    throw new Error(`${dir}: no such folder (--model takes a Hugging Face model folder: config.json, model.safetensors, tokenizer.json)`, {
      cause: e,
    });
  }
  if (!s.isDirectory()) throw new Error(`${dir}: not a folder (--model takes a Hugging Face model folder, not a file)`);
  return {
    name: dir,
    files: async () => (await readdir(dir, { withFileTypes: true })).filter((e) => e.isFile()).map((e) => e.name),
    read: async (file) => {
      try {
        return new Uint8Array(await readFile(join(dir, file)));
      } catch (e) {
        throw new Error(`${join(dir, file)}: cannot be read (${e instanceof Error ? e.message : String(e)})`, { cause: e });
      }
    },
  };
}
