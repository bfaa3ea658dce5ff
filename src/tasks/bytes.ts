/**
 * Bytes to text, gunzipping when the bytes are gzip (magic 1f 8b), in Node and in the browser.
 * Node: node:zlib, reached through process.getBuiltinModule so that no bundler sees a Node
 * import in browser code. Browser (and anywhere without it): DecompressionStream('gzip').
 */

export function isGzip(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

interface NodeZlib {
  gunzipSync(b: Uint8Array): Uint8Array;
}

function nodeZlib(): NodeZlib | undefined {
  const p = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  return p?.getBuiltinModule?.('node:zlib') as NodeZlib | undefined;
}

async function gunzipStream(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

export async function gunzip(bytes: Uint8Array): Promise<Uint8Array> {
  const zlib = nodeZlib();
  return zlib ? new Uint8Array(zlib.gunzipSync(bytes)) : gunzipStream(bytes);
}

/** Decodes a plain or gzipped UTF-8 file. */
export async function bytesToText(bytes: Uint8Array): Promise<string> {
  const plain = isGzip(bytes) ? await gunzip(bytes) : bytes;
  return new TextDecoder('utf-8', { fatal: false }).decode(plain);
}
