/**
 * Real listeners on 127.0.0.1 for the network tests (Node only): each counts the connections it
 * accepts, so a test can say "zero" about what actually arrived, whatever the program claimed.
 */
import { createHash } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';

export interface Listener {
  port: number;
  /** connections accepted so far */
  count(): number;
  close(): Promise<void>;
}

/** A TCP listener that accepts and drops every connection. */
export async function tcpListener(): Promise<Listener> {
  let n = 0;
  const server = createServer((c) => {
    n++;
    c.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, count: () => n, close: () => new Promise((r) => server.close(() => r())) };
}

/** A WebSocket listener (the RFC 6455 handshake by hand); counts TCP connections, upgrades included. */
export async function wsListener(): Promise<Listener> {
  let n = 0;
  const server = createHttpServer((_req, res) => res.writeHead(426).end());
  server.on('connection', () => n++);
  server.on('upgrade', (req, socket) => {
    const key = String(req.headers['sec-websocket-key'] ?? '');
    const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    socket.end(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    count: () => n,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
