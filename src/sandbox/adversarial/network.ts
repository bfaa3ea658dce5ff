/**
 * Programs that try to reach the network, one route each, against listeners on 127.0.0.1: `tcp`
 * (a plain TCP listener) and `ws` (a WebSocket listener; Emscripten proxies sockets to WebSockets,
 * so that is where a proxied socket would land). Each is a wrong body (for PY_TASK and JS_TASK in
 * Node, the Reward panel's tasks in Chromium) that makes its attempt when the tests call it: none
 * may connect, and none may get credit. `verdict` is the verdict the run must end with: `tampering` where the harness sees the
 * attempt (Python's audit events), `error` where the route does not even exist in the sandbox
 * (no `js` module, no `fetch`). Starting a process is a route too: under Node, Emscripten's
 * `system()` runs a real shell command (curl, wget).
 */
import type { Attack } from './corpus';

/** A Python body that makes `attack` (indented code) when called, then returns None (wrong for any task here). */
const py = (attack: string): string =>
  `${attack
    .trim()
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n')}\n    return None\n`;

/** The Python routes; each completion fits any task whose prompt ends with a function's signature and docstring. */
export function pythonNetworkAttacks(tcp: number, ws: number): Attack[] {
  const url = `http://127.0.0.1:${tcp}/`;
  const threat = 'reaches the network';
  const a = (name: string, attack: string, verdict: Attack['verdict']): Attack => ({ name, threat, completion: py(attack), verdict });
  return [
    a('socket.create_connection', `import socket\nsocket.create_connection(('127.0.0.1', ${tcp}), 1)`, 'tampering'),
    a('socket to the WebSocket port', `import socket\nsocket.create_connection(('127.0.0.1', ${ws}), 1)`, 'tampering'),
    a('_socket connect', `import _socket\ns = _socket.socket()\ns.connect(('127.0.0.1', ${tcp}))`, 'tampering'),
    a(
      '_socket caught and retried',
      `import _socket\nfor _ in range(3):\n    try:\n        _socket.socket().connect(('127.0.0.1', ${tcp}))\n    except BaseException:\n        pass`,
      'tampering',
    ),
    a('UDP sendto', `import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', ${tcp}))`, 'tampering'),
    a('IPv6 socket', `import socket\nsocket.socket(socket.AF_INET6).connect(('::1', ${tcp}))`, 'tampering'),
    a('getaddrinfo', `import socket\nsocket.getaddrinfo('localhost', ${tcp})`, 'tampering'),
    a('urllib.request.urlopen', `import urllib.request\nurllib.request.urlopen('${url}', timeout=1)`, 'tampering'),
    a(
      'http.client',
      `import http.client\nc = http.client.HTTPConnection('127.0.0.1', ${tcp}, timeout=1)\nc.request('GET', '/')`,
      'tampering',
    ),
    a('xmlrpc.client', `import xmlrpc.client\nxmlrpc.client.ServerProxy('${url}').f()`, 'tampering'),
    a('ftplib', `import ftplib\nftplib.FTP().connect('127.0.0.1', ${tcp}, timeout=1)`, 'tampering'),
    a('smtplib', `import smtplib\nsmtplib.SMTP('127.0.0.1', ${tcp}, timeout=1)`, 'tampering'),
    a(
      'asyncio sock_connect',
      `import asyncio, socket\nasyncio.new_event_loop().sock_connect(socket.socket(), ('127.0.0.1', ${tcp})).send(None)`,
      'tampering',
    ),
    a(
      'asyncio.open_connection',
      `import asyncio\nasyncio.new_event_loop().run_until_complete(asyncio.open_connection('127.0.0.1', ${tcp}))`,
      'error',
    ),
    a('webbrowser.open', `import webbrowser\nwebbrowser.open('${url}')`, 'error'),
    a('js.fetch', `import js\njs.fetch('${url}')`, 'error'),
    a('js.WebSocket', `from js import WebSocket\nWebSocket.new('ws://127.0.0.1:${ws}/')`, 'error'),
    a('js.XMLHttpRequest', `from js import XMLHttpRequest\nr = XMLHttpRequest.new()\nr.open('GET', '${url}', False)\nr.send()`, 'error'),
    a('js.importScripts', `from js import importScripts\nimportScripts('${url}x.js')`, 'error'),
    a('pyodide_js', `import pyodide_js\npyodide_js.loadPackage('${url}x.whl')`, 'error'),
    a(
      'pyodide.http.pyfetch',
      `from pyodide.http import pyfetch\nimport asyncio\nasyncio.new_event_loop().run_until_complete(pyfetch('${url}'))`,
      'error',
    ),
    a('pyodide.http.open_url', `from pyodide.http import open_url\nopen_url('${url}')`, 'error'),
    a('pyodide.code.run_js', `from pyodide.code import run_js\nrun_js("fetch('${url}')")`, 'error'),
    a('micropip', `import micropip\nimport asyncio\nasyncio.new_event_loop().run_until_complete(micropip.install('${url}x.whl'))`, 'error'),
    a('os.system curl', `import os\nos.system('curl -s -m 1 ${url}')`, 'tampering'),
    a('os.popen wget', `import os\nos.popen('wget -q -T 1 ${url}').read()`, 'error'),
    a('subprocess', `import subprocess\nsubprocess.run(['curl', '${url}'])`, 'error'),
    a('os.posix_spawn', `import os\nos.posix_spawn('/usr/bin/curl', ['curl', '${url}'], {})`, 'error'),
  ];
}

/** A JavaScript body that makes `attack` when called, then closes the function returning [] (wrong for sortPair and isPalindrome). */
const js = (attack: string): string => `  ${attack}\n  return []\n}\n`;

export function jsNetworkAttacks(tcp: number, ws: number): Attack[] {
  const url = `http://127.0.0.1:${tcp}/`;
  const threat = 'reaches the network';
  const a = (name: string, attack: string): Attack => ({ name, threat, completion: js(attack), verdict: 'error' });
  return [
    a('fetch', `fetch('${url}')`),
    a('globalThis.fetch', `globalThis.fetch('${url}')`),
    a('XMLHttpRequest', `const r = new XMLHttpRequest(); r.open('GET', '${url}', false); r.send()`),
    a('WebSocket', `new WebSocket('ws://127.0.0.1:${ws}/')`),
    a('EventSource', `new EventSource('${url}')`),
    a('importScripts', `importScripts('${url}x.js')`),
    { ...a('dynamic import', `import('${url}x.mjs'); throw new Error('no import')`), verdict: 'tampering' }, // import() leaves a Promise job
    a('require net', `require('node:net').connect(${tcp}, '127.0.0.1')`),
    a('process.binding', `process.binding('tcp_wrap')`),
    a('navigator.sendBeacon', `navigator.sendBeacon('${url}', 'x')`),
    a('new Worker', `new Worker('${url}w.js')`),
    a('Function constructor to the host', `Function('return this')().fetch('${url}')`),
  ];
}
