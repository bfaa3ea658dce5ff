/** Saving a file from the page: an object URL and a clicked link (no network). */

export function downloadBlob(name: string, blob: Blob): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function downloadBytes(name: string, bytes: Uint8Array | string, type = 'application/octet-stream'): void {
  downloadBlob(name, new Blob([bytes as Uint8Array<ArrayBuffer>], { type }));
}
