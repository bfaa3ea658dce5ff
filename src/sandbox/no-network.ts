/**
 * No network for Emscripten programs (Pyodide). Emscripten gives a C program sockets through its
 * SOCKFS layer, which proxies each TCP or UDP socket to a WebSocket (`ws` in Node, the worker's
 * `WebSocket` in the browser): `socket.create_connection(("127.0.0.1", port))` in Python opens a
 * real connection to that port. Every socket system call starts at `SOCKFS.createSocket` (socket,
 * socketpair, accept) or at a socket's `sock_ops` (connect, bind, listen, send, recv); both are
 * replaced here, before any untrusted code runs, by functions that fail with EACCES, and fixed in
 * place. Python sees `PermissionError: [Errno 2] Permission denied` from `socket.socket()`, so
 * urllib, http.client, asyncio streams, ftplib, smtplib and the rest fail the same way, whatever
 * module they come from. Pyodide's own socket layer for Node (`useNodeSockFS`, node:net) is never
 * installed, and only JavaScript could install it.
 */

interface ErrnoErrorClass {
  new (errno: number): Error;
}

/** The parts of an Emscripten module used here. */
export interface SocketModule {
  SOCKFS?: Record<string, unknown> & { websocket_sock_ops?: Record<string, unknown> };
  FS: { ErrnoError: ErrnoErrorClass };
  ERRNO_CODES?: Record<string, number>;
}

/** Emscripten's EACCES (its own errno numbering, which Python's errno module shares). */
const EACCES_FALLBACK = 2;

/** Replaces every socket entry point of the module; returns the names replaced. */
export function removeSockets(mod: SocketModule): string[] {
  const sockfs = mod.SOCKFS;
  if (!sockfs) return [];
  const errno = mod.ERRNO_CODES?.EACCES ?? EACCES_FALLBACK;
  const ErrnoError = mod.FS.ErrnoError;
  const refuse = (): never => {
    throw new ErrnoError(errno);
  };
  const replaced: string[] = [];
  const fix = (obj: Record<string, unknown>, name: string, label: string): void => {
    Object.defineProperty(obj, name, { value: refuse, writable: false, configurable: false });
    replaced.push(label);
  };
  fix(sockfs, 'createSocket', 'SOCKFS.createSocket');
  const ops = sockfs.websocket_sock_ops;
  if (ops) for (const name of Object.keys(ops)) if (typeof ops[name] === 'function') fix(ops, name, `SOCKFS.websocket_sock_ops.${name}`);
  return replaced;
}
