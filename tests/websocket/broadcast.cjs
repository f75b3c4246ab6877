// SPDX-License-Identifier: MIT
// examples/chat through node-ws: 1,000 clients join the room (chat
// --threads 2, so members live on two loops), then each sends one message
// and every client must receive all 1,000, each exactly once; then each
// closes with 1000 and must get 1000 back.  Exits non-zero on failure.
'use strict';
const WebSocket = require('ws');

const port = Number(process.argv[2]);
const N = 1000;
const url = `ws://127.0.0.1:${port}/chat`;

function fail(what) {
  console.error(`broadcast.cjs: FAILED: ${what}`);
  process.exit(1);
}

const guard = setTimeout(() => fail('timed out'), 100000);

async function main() {
  const clients = [];
  const opened = [];
  for (let i = 0; i < N; i++) {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    ws.got = new Set();
    clients.push(ws);
    opened.push(new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', (e) => reject(new Error(`client ${i}: ${e.message}`)));
    }));
  }
  await Promise.all(opened).catch((e) => fail(e.message));

  const done = clients.map((ws, i) => new Promise((resolve) => {
    ws.on('message', (data, isBinary) => {
      const text = data.toString();
      if (isBinary) fail(`client ${i}: a binary message`);
      if (ws.got.has(text)) fail(`client ${i}: ${text} twice`);
      ws.got.add(text);
      if (ws.got.size === N) resolve();
    });
    ws.on('close', (code) => {
      if (ws.got.size < N) fail(`client ${i} closed with ${code} after ${ws.got.size}`);
    });
  }));
  const t0 = process.hrtime.bigint();
  clients.forEach((ws, i) => ws.send(`m${i}`));
  await Promise.all(done);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  for (const ws of clients)
    for (let i = 0; i < N; i++)
      if (!ws.got.has(`m${i}`)) fail(`m${i} missing`);

  const closed = clients.map((ws) => new Promise((resolve) => {
    ws.removeAllListeners('close');
    ws.on('close', (code) => {
      if (code !== 1000) fail(`close code ${code}`);
      resolve();
    });
  }));
  clients.forEach((ws) => ws.close(1000));
  await Promise.all(closed);
  clearTimeout(guard);
  console.log(`broadcast.cjs: ${N} clients, ${N * N} deliveries in ${ms.toFixed(0)} ms`);
}

main();
