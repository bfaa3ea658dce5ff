import { mkdtemp, readdir, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeCheckpoint, encodeCheckpoint } from './index';
import { loadCheckpointFile, saveCheckpointFile } from './node';

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'coderl-ckpt-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const bytesOf = (step: number) =>
  encodeCheckpoint({
    config: { nLayer: 1 },
    tokenizer: null,
    meta: { step },
    tensors: { w: { data: Float32Array.from({ length: 1000 }, (_, i) => i * step), shape: [10, 100] } },
  });

describe('checkpoint files (Node)', () => {
  it('saves atomically and loads back, creating folders and replacing old files', async () => {
    const path = join(dir, 'runs', 'a', 'model.crlckpt');
    await saveCheckpointFile(path, bytesOf(1));
    await saveCheckpointFile(path, bytesOf(2)); // replaces
    const loaded = decodeCheckpoint(await loadCheckpointFile(path));
    expect(loaded.meta).toEqual({ step: 2 });
    expect(loaded.tensors.w!.data[999]).toBe(1998);
    expect(await readdir(join(dir, 'runs', 'a'))).toEqual(['model.crlckpt']); // no temp file left behind
  });

  it('says when a file is missing or is a directory', async () => {
    const missing = join(dir, 'nope.crlckpt');
    await expect(loadCheckpointFile(missing)).rejects.toThrow(`checkpoint file not found: ${missing}`);
    await mkdir(join(dir, 'folder'));
    await expect(loadCheckpointFile(join(dir, 'folder'))).rejects.toThrow('checkpoint path is a directory');
  });

  it('a failed save leaves the old file and no temp file', async () => {
    const path = join(dir, 'keep.crlckpt');
    await saveCheckpointFile(path, bytesOf(3));
    await mkdir(join(dir, 'blocked.crlckpt')); // renaming a file over a directory fails
    await expect(saveCheckpointFile(join(dir, 'blocked.crlckpt'), bytesOf(4))).rejects.toThrow('could not save checkpoint to');
    expect((await readdir(dir)).filter((f) => f.includes('.tmp-'))).toEqual([]);
    expect(decodeCheckpoint(await loadCheckpointFile(path)).meta).toEqual({ step: 3 });
  });

  it('a file that is not a checkpoint is rejected on decode', async () => {
    const path = join(dir, 'notes.txt');
    await writeFile(path, 'hello');
    expect(() => decodeCheckpoint(new Uint8Array(0))).toThrow('this file is empty');
    expect(() => decodeCheckpoint(new TextEncoder().encode('CRLC'))).toThrow('truncated');
    await expect(loadCheckpointFile(path).then(decodeCheckpoint)).rejects.toThrow('not a Code RL Lab checkpoint');
  });
});
