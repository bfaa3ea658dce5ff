/** Checkpoint files in Node (CLI, tests). No DOM here; the browser has browser.ts. */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { CheckpointError } from './header';
import { errorText } from '../util/errors';

/**
 * Writes `bytes` to `path` atomically: into a temporary file beside it, flushed to disk, then
 * renamed over `path`, so a crash leaves either the old file or the new one, never half of one.
 * Creates missing parent directories.
 */
export async function saveCheckpointFile(path: string, bytes: Uint8Array): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await mkdir(dirname(path), { recursive: true });
    const file = await open(tmp, 'w');
    try {
      await file.writeFile(bytes);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw new CheckpointError(`could not save checkpoint to ${path}: ${errorText(e)}`, { cause: e });
  }
}

/** Reads a checkpoint file's bytes (decode them with decodeCheckpoint). */
export async function loadCheckpointFile(path: string): Promise<Uint8Array> {
  try {
    const buf = await readFile(path);
    return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new CheckpointError(`checkpoint file not found: ${path}`, { cause: e });
    if (code === 'EISDIR') throw new CheckpointError(`checkpoint path is a directory, not a file: ${path}`, { cause: e });
    throw new CheckpointError(`could not read checkpoint ${path}: ${errorText(e)}`, { cause: e });
  }
}
