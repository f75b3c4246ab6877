// SPDX-License-Identifier: MIT
// bench/ws.sh's peer: node-ws echoing every message (no compression),
// on 127.0.0.1:PORT, any path.
'use strict';
const WebSocket = require('ws');
const port = Number(process.argv[2]);
const wss = new WebSocket.Server({ host: '127.0.0.1', port, perMessageDeflate: false });
wss.on('connection', (ws) => {
  ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
});
wss.on('listening', () => console.log(`listening ${port}`));
