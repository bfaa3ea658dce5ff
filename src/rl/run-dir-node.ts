/** A run directory on disk. Writes go to a temporary file and are renamed, so a crash never leaves half a file. */
import { appendFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { RunDir } from './run-dir';

export function fileRunDir(dir: string): RunDir {
  const at = (name: string) => {
    if (name.split('/').some((p) => p === '..' || p === '')) throw new Error(`run store: bad file name "${name}"`);
    return join(dir, name);
  };
  return {
    async read(name) {
      try {
        return new Uint8Array(await readFile(at(name)));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw e;
      }
    },
    async write(name, data) {
      const p = at(name);
      await mkdir(dirname(p), { recursive: true });
      const tmp = `${p}.${process.pid}.tmp`;
      await writeFile(tmp, data);
      await rename(tmp, p);
    },
    async append(name, text) {
      const p = at(name);
      await mkdir(dirname(p), { recursive: true });
      await appendFile(p, text);
    },
  };
}
