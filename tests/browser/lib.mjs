// Shared by the viewer's browser tests and benchmark: a static file server on
// 127.0.0.1 and a headless Debian Chromium driven by playwright-core (installed by
// `cargo xtask test` into .tools/node_modules; HEAPSNAP_NODE_MODULES points there).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const modules = process.env.HEAPSNAP_NODE_MODULES;
if (!modules) throw new Error('HEAPSNAP_NODE_MODULES is not set (the .tools/node_modules with playwright-core)');
const require = createRequire(path.join(modules, 'noop.js'));
export const { chromium } = require('playwright-core');

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
};

/// Serves `root` (and `extra`: URL path → file) on 127.0.0.1; resolves to the base URL.
export function serve(root, extra = {}) {
  root = path.resolve(root);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    let file = extra[url.pathname];
    if (!file) {
      const rel = decodeURIComponent(url.pathname).replace(/^\/+/, '') || 'index.html';
      file = path.join(root, rel);
      if (!file.startsWith(path.resolve(root))) { res.writeHead(403); res.end(); return; }
    }
    fs.stat(file, (err, st) => {
      if (err || !st.isFile()) { res.writeHead(404); res.end('not found'); return; }
      res.writeHead(200, {
        'content-type': MIME[path.extname(file)] || 'application/octet-stream',
        'content-length': st.size,
        'cache-control': 'no-store',
      });
      fs.createReadStream(file).pipe(res);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    resolve({ url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() });
  }));
}

/// Headless Chromium with the flags this machine needs (no sandbox as root, no
/// background network chatter).
export async function launch(extraArgs = []) {
  const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
  if (!fs.existsSync(executablePath)) {
    throw new Error(`no Chromium at ${executablePath}: \`cargo xtask test\` installs Debian's chromium`);
  }
  return chromium.launch({
    executablePath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run', ...extraArgs],
  });
}

/// Waits for the n-th `heapsnap:<name>` performance mark.
export async function waitMark(page, name, n = 1, timeout = 60000) {
  await page.waitForFunction(([m, k]) => performance.getEntriesByName(`heapsnap:${m}`).length >= k, [name, n], { timeout });
}
