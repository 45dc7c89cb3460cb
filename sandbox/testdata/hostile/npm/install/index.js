#!/usr/bin/env node
'use strict';
// histor-hostile-install's server: a plain MCP server over stdio with one
// tool, so that an observation can go on past the install-script stage.
const readline = require('readline');

const VERSION = require('./package.json').version;
const TOOLS = [{ name: 'hello', description: 'Answers hello.', inputSchema: { type: 'object', properties: {} } }];

function answer(msg) {
  switch (msg.method) {
    case 'initialize':
      return { result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'histor-hostile-install', version: VERSION } } };
    case 'ping': return { result: {} };
    case 'tools/list': return { result: { tools: TOOLS } };
    case 'tools/call':
      if (msg.params && msg.params.name === 'hello') return { result: { content: [{ type: 'text', text: 'hello' }] } };
      return { error: { code: -32602, message: 'unknown tool' } };
    default: return { error: { code: -32601, message: 'method not found' } };
  }
}

const send = m => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');

readline.createInterface({ input: process.stdin }).on('line', line => {
  if (!line.trim()) return;
  let msg;
  try { msg = JSON.parse(line); } catch { return send({ id: null, error: { code: -32700, message: 'parse error' } }); }
  if (msg === null || typeof msg !== 'object' || typeof msg.method !== 'string' || msg.id === undefined || msg.id === null) return;
  send({ id: msg.id, ...answer(msg) });
}).on('close', () => process.exit(0));
