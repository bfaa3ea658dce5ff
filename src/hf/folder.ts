/**
 * A model folder as Hugging Face writes it, behind one small interface so the loader does not
 * care where the files are: a directory on disk (node.ts), files the user picked or dropped in
 * the browser, or the copy the app keeps in OPFS (browser.ts).
 */

export interface ModelFolder {
  /** what the user calls it: a path, or the picked folder's name */
  readonly name: string;
  /** the file names directly in it */
  files(): Promise<string[]>;
  /** a file's bytes; throws naming the folder and the file when it cannot be read */
  read(file: string): Promise<Uint8Array>;
}

/** The files of a model folder the loader reads, in the order it reads them. */
export const HF_FILES = {
  config: 'config.json',
  weights: 'model.safetensors',
  index: 'model.safetensors.index.json',
  tokenizer: 'tokenizer.json',
  tokenizerConfig: 'tokenizer_config.json',
  generationConfig: 'generation_config.json',
} as const;

/** Which files of a listing belong to the model (the rest, e.g. README.md or .bin weights, are not copied). */
export function isModelFile(name: string): boolean {
  return (
    (Object.values(HF_FILES) as string[]).includes(name) ||
    /^model-\d+-of-\d+\.safetensors$/.test(name) ||
    name === 'adapter_config.json' ||
    name === 'adapter_model.safetensors'
  );
}

/** A folder of in-memory files (tests, and files picked in the browser once read). */
export function memoryFolder(name: string, files: ReadonlyMap<string, Uint8Array>): ModelFolder {
  return {
    name,
    files: async () => [...files.keys()],
    read: async (file) => {
      const b = files.get(file);
      if (!b) throw new Error(`${name}: no file ${file}`);
      return b;
    },
  };
}
