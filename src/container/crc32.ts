/**
 * CRC-32 (IEEE 802.3, as in zlib, PNG and gzip): reflected polynomial 0xEDB88320, initial value
 * and final XOR 0xFFFFFFFF. Table-driven, one byte per step, with a 256-entry table built once.
 */

const TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** Continues a CRC over more bytes: crc32(ab) === crc32Update(crc32(a), b). */
export function crc32Update(crc: number, bytes: Uint8Array): number {
  let c = ~crc >>> 0;
  for (let i = 0; i < bytes.length; i++) c = TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

/** CRC-32 of `bytes` as an unsigned 32-bit integer; crc32 of ASCII "123456789" is 0xCBF43926. */
export function crc32(bytes: Uint8Array): number {
  return crc32Update(0, bytes);
}

/** The CRC as the 8 lower-case hex digits the checkpoint header stores. */
export function crc32Hex(crc: number): string {
  return (crc >>> 0).toString(16).padStart(8, '0');
}
