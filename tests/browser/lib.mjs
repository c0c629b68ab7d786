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

/// Hovers and zooms a painted flame graph, one event per animation frame: each event's
/// main-thread work is timed from its dispatch until the page is idle again (its
/// handlers, the re-render and the canvas drawing, which run before the next task), and
/// the animation-frame intervals are traced throughout (issue 19: p99 ≤ 16 ms).
/// Returns the times in ms, and the redraws the zooms caused.
export async function flameInteraction(page, { hovers = 300, zooms = 20 } = {}) {
  return page.evaluate(async ([hovers, zooms]) => {
    const c = document.querySelector('[data-testid=flame-graph]');
    const r = c.getBoundingClientRect();
    const idle = () => new Promise((res) => { const ch = new MessageChannel(); ch.port1.onmessage = () => res(); ch.port2.postMessage(0); });
    const frame = () => new Promise((res) => requestAnimationFrame(() => res()));
    const work = async (fire) => { await frame(); const t0 = performance.now(); fire(); await idle(); return performance.now() - t0; };
    const mouse = (type, x, y) => c.dispatchEvent(new MouseEvent(type, { bubbles: true, clientX: r.left + x, clientY: r.top + y }));
    const drawn = () => performance.getEntriesByName('heapsnap:flame-drawn').length;
    const intervals = [];
    let last = null, tracing = true;
    const tick = (t) => { if (last !== null) intervals.push(t - last); last = t; if (tracing) requestAnimationFrame(tick); };
    requestAnimationFrame(tick);
    const hover = [];
    for (let i = 0; i < hovers; i++) hover.push(await work(() => mouse('mousemove', (i * 37.3) % r.width, ((i * 7) % 12) * 20 + 10)));
    const zoom = [];
    const before = drawn();
    for (let i = 0; i < zooms; i++) {
      zoom.push(await work(() => mouse('click', r.width * ((0.05 + i * 0.173) % 1), (1 + (i % 6)) * 20 + 10)));
      const root = document.querySelector('nav.crumbs button');
      if (root) zoom.push(await work(() => root.click()));
    }
    tracing = false;
    return { hover, zoom, intervals, redraws: drawn() - before };
  }, [hovers, zooms]);
}

/// The `q` quantile of `xs` (nearest rank).
export function quantile(xs, q) {
  const v = [...xs].sort((a, b) => a - b);
  return v[Math.min(v.length - 1, Math.floor(q * v.length))];
}
