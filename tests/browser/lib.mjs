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

/// How a user hovers and zooms each tool's flame graph, for `flameInteraction`:
/// - `area`: the element the flame graph is drawn in (a selector, or [selector, n]: the
///   n-th match); positions are relative to its box and every event goes to the element
///   under the point, as the browser sends it;
/// - `rows`: the centre of the top row and the row height, CSS px;
/// - `zoom`: the gesture that zooms into the frame under the pointer (`click`, or
///   `dblclick`: two clicks then the dblclick event), made after the pointer has moved
///   there (untimed); `back`: how the user zooms out again (`{ click: selector }` a
///   button, `{ key }` a key press on the page, `{ row }` a click on that row's middle);
/// - `hover` and `view`: what must change when a hover shows a frame and when a zoom
///   changes the view (`{ text: selector }`, `{ pixels: canvas selector }`,
///   `{ attrs: [selector, attribute] }`; `text: 'body'`: any text the page shows), so a
///   script that does nothing fails;
/// - `settleMs`: an untimed wait after each zoom step (the tool's zoom animation).
export const FLAME_TOOLS = {
  // Click to zoom, the first breadcrumb ("all") to zoom out; the tooltip on hover.
  heapsnap: {
    area: '[data-testid=flame-graph]', rows: [10, 20], zoom: 'click', back: { click: 'nav.crumbs button' },
    hover: { text: '.tooltip' }, view: { text: 'nav.crumbs' }, settleMs: 0,
  },
  // speedscope 1.25 (src/views/flamechart-pan-zoom-view.tsx): a click selects a frame,
  // a double-click zooms the view onto it, `0` zooms all the way out (ctrl+wheel zooms
  // continuously). Its default view, the time-ordered flame chart, is the page's third
  // canvas (after the page-wide WebGL one and the minimap's; class names are hashed),
  // 20 px frames below a 20 px axis. Rectangles are drawn with WebGL, labels and
  // outlines on the view's own 2D canvas, both in the next animation frame; the hover
  // tooltip is a DOM element.
  speedscope: {
    area: ['canvas', 2], rows: [30, 20], zoom: 'dblclick', back: { key: '0' },
    hover: { text: 'body' }, view: { pixels: ['canvas', 2] }, settleMs: 0,
  },
  // `pprof -http` of Go 1.19 (/ui/flamegraph: d3-flame-graph, SVG, root on top): a
  // click zooms into a frame with a 750 ms transition, a click on the root zooms out;
  // hovering writes the frame's details above the graph.
  pprof: {
    area: '#chart svg', rows: [9, 18], zoom: 'click', back: { row: 0 },
    hover: { text: '#flamegraphdetails' }, view: { attrs: ['#chart rect', 'width'] }, settleMs: 800,
  },
};

/// Hovers and zooms a painted flame graph as `tool` (one of FLAME_TOOLS) is used, one
/// event per animation frame. Each event's work is timed the same way for every tool:
/// from its dispatch until the page is idle again (its handlers, microtasks and what
/// they draw at once), plus the next animation frame (from its first callback to the
/// first task after it: the page's animation-frame callbacks, where speedscope draws,
/// and the style, layout and paint of the frame). The animation-frame intervals and
/// each frame's main-thread work are traced throughout (issue 19: p99 ≤ 16 ms).
/// Throws when the hovers showed nothing or the zooms changed nothing. Returns the times
/// in ms, and the redraws the zooms caused (heapsnap's `flame-drawn` marks).
export async function flameInteraction(page, { hovers = 300, zooms = 20, tool = FLAME_TOOLS.heapsnap } = {}) {
  return page.evaluate(async ([hovers, zooms, tool]) => {
    const pick = (sel) => (Array.isArray(sel) ? document.querySelectorAll(sel[0])[sel[1]] : document.querySelector(sel));
    const area = pick(tool.area);
    if (!area) throw new Error(`no flame graph (${tool.area})`);
    const r = area.getBoundingClientRect();
    const idle = () => new Promise((res) => { const ch = new MessageChannel(); ch.port1.onmessage = () => res(); ch.port2.postMessage(0); });
    const frame = () => new Promise((res) => requestAnimationFrame(() => res()));
    const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
    // Every animation frame: its interval, and its work from the first callback (this
    // one, registered a frame ahead of any the page registers during an event) to the
    // first task after the frame's rendering.
    const intervals = [], frames = [];
    let last = null, tracing = true;
    const tick = (t) => {
      if (last !== null) intervals.push(t - last);
      last = t;
      const f = { start: performance.now(), end: null };
      frames.push(f);
      idle().then(() => { f.end = performance.now(); });
      if (tracing) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
    // The first frame started after `t` has been painted: its work.
    const frameAfter = async (t) => {
      for (;;) {
        const f = frames.find((x) => x.start >= t && x.end !== null);
        if (f) return f.end - f.start;
        await frame();
        await idle();
      }
    };
    // Right after a frame's rendering: where each event is fired, so the next frame is
    // a whole interval away (and one event per frame when its work fits in one).
    const settled = async () => { await frame(); await idle(); };
    // Called when settled; returns settled too (frameAfter ends after a frame).
    const work = async (fire) => {
      const t0 = performance.now();
      fire();
      await idle();
      const t1 = performance.now();
      return t1 - t0 + (await frameAfter(t1));
    };
    // Mouse events as the browser sends them: over/out when the element under the
    // pointer changes, then the event itself, to the element under the point.
    let under = null;
    const mouse = (type, x, y, extra = {}) => {
      const [cx, cy] = [r.left + x, r.top + y];
      const el = document.elementFromPoint(cx, cy) || area;
      const init = { bubbles: true, cancelable: true, composed: true, view: window, clientX: cx, clientY: cy, ...extra };
      if (el !== under) {
        if (under) under.dispatchEvent(new MouseEvent('mouseout', { ...init, relatedTarget: el }));
        el.dispatchEvent(new MouseEvent('mouseover', { ...init, relatedTarget: under }));
        under = el;
      }
      el.dispatchEvent(new MouseEvent(type, init));
    };
    const click = (x, y, detail = 1) => { mouse('mousedown', x, y, { detail }); mouse('mouseup', x, y, { detail }); mouse('click', x, y, { detail }); };
    const gesture = (kind, x, y) => {
      click(x, y, 1);
      if (kind === 'dblclick') { click(x, y, 2); mouse('dblclick', x, y, { detail: 2 }); }
    };
    const rowY = (k) => tool.rows[0] + k * tool.rows[1];
    const probe = (p) => {
      if (p.text) return [...document.querySelectorAll(p.text)].map((e) => e.textContent).join('|');
      if (p.attrs) return [...document.querySelectorAll(p.attrs[0])].slice(0, 400).map((e) => e.getAttribute(p.attrs[1])).join(',');
      const c = pick(p.pixels);
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let h = 0;
      for (let i = 0; i < d.length; i += 4) h = (Math.imul(h, 31) + d[i] + (d[i + 1] << 8) + (d[i + 2] << 16)) | 0;
      return String(h);
    };
    const drawn = () => performance.getEntriesByName('heapsnap:flame-drawn').length;

    const hover = [];
    const blank = probe(tool.hover);
    await settled();
    let shown = 0;
    for (let i = 0; i < hovers; i++) {
      hover.push(await work(() => mouse('mousemove', (i * 37.3) % r.width, rowY((i * 7) % 12))));
      const p = probe(tool.hover);
      if (p && p !== blank) shown++;
    }
    const zoom = [];
    let zoomed = 0, back = 0;
    const before = drawn();
    for (let i = 0; i < zooms; i++) {
      const [x, y] = [r.width * ((0.05 + i * 0.173) % 1), rowY(1 + (i % 6))];
      mouse('mousemove', x, y);
      await settled();
      const v0 = probe(tool.view);
      zoom.push(await work(() => gesture(tool.zoom, x, y)));
      if (tool.settleMs) { await sleep(tool.settleMs); await settled(); }
      const v1 = probe(tool.view);
      if (v1 !== v0) zoomed++;
      const b = tool.back;
      if (b.click) {
        const button = document.querySelector(b.click);
        if (button) zoom.push(await work(() => button.click()));
      } else if (b.key) {
        zoom.push(await work(() => document.body.dispatchEvent(new KeyboardEvent('keydown', { key: b.key, bubbles: true, cancelable: true }))));
      } else {
        mouse('mousemove', r.width / 2, rowY(b.row));
        await settled();
        zoom.push(await work(() => gesture('click', r.width / 2, rowY(b.row))));
      }
      if (tool.settleMs) { await sleep(tool.settleMs); await settled(); }
      if (probe(tool.view) !== v1) back++;
    }
    tracing = false;
    if (shown < hovers / 4) throw new Error(`only ${shown} of ${hovers} hovers showed a frame (${tool.hover.text})`);
    if (zoomed < zooms / 2 || back < zooms / 2) throw new Error(`of ${zooms} zooms, ${zoomed} changed the view and ${back} zoomed out again`);
    const busy = frames.filter((f) => f.end !== null).map((f) => f.end - f.start);
    return { hover, zoom, intervals, frames: busy, redraws: drawn() - before, shown, zoomed, back };
  }, [hovers, zooms, tool]);
}

/// Changes settings of heapsnap's loaded profile as its user does, and times each
/// change from the control's `change` event to the redrawn flame graph
/// (heapsnap:flame-drawn) and to the reducer's new flame tree (heapsnap:flame-built)
/// (issue 19: a sample-type switch and a focus change ≤ 150 ms at 1M samples): `n`
/// sample-type switches between `sampleTypes` (default: another type, `alloc_space`
/// preferred, then back to the one shown), then `n` focus changes between the two
/// regexes of `focus` (each must match part of the profile, and not the same part).
/// Every change must redraw the flame graph, be accepted (no filter error) and change
/// the status line's total (`inuse_space: 1.2 MB total · shown 300 kB`), so a change
/// that did nothing fails. Leaves the last values set. Returns, per setting, the
/// changes' times in ms ({ built, drawn }) and the values used.
export async function settingChanges(page, { focus, sampleTypes = null, n = 6, timeout = 120000 }) {
  if (!sampleTypes) {
    sampleTypes = await page.$eval('[data-testid=sample-type]', (s) => {
      const all = [...s.options].map((o) => o.value);
      const other = ['alloc_space', 'inuse_space', ...all].find((t) => t !== s.value && all.includes(t));
      return [other, s.value];
    });
  }
  if (!sampleTypes[0] || sampleTypes[0] === sampleTypes[1]) throw new Error('the profile has one sample type: nothing to switch to');
  // The status line's figures without the sample type's name (`1.2 MB total · shown 300 kB`).
  const status = () => page.$eval('nav.tabs .status span:nth-child(2)', (e) => e.textContent.replace(/^[^:]*: /, ''));
  const change = async (selector, value) => {
    const before = await status();
    const drawn = await page.evaluate(() => performance.getEntriesByName('heapsnap:flame-drawn').length);
    await page.evaluate(([sel, v]) => {
      const el = document.querySelector(sel);
      el.value = v;
      performance.mark('heapsnap:bench-change');
      el.dispatchEvent(new Event('change', { bubbles: true }));
    }, [selector, value]);
    await waitMark(page, 'flame-drawn', drawn + 1, timeout);
    const refused = await page.$('[data-testid=filter-error]');
    if (refused) throw new Error(`${selector} = ${value}: ${await refused.textContent()}`);
    const after = await status();
    if (after === before) throw new Error(`${selector} = ${value}: the total shown did not change (${after})`);
    return page.evaluate(() => {
      const t = (m) => performance.getEntriesByName(`heapsnap:${m}`).at(-1).startTime;
      return { built: t('flame-built') - t('bench-change'), drawn: t('flame-drawn') - t('bench-change') };
    });
  };
  // As a user meets them, seconds after the first paint: the page sorts the samples by
  // stack in the background right after it (a few hundred ms at most), and every tree
  // after that is built from that order.
  await waitMark(page, 'stacks-sorted', 1, timeout);
  const out = {};
  for (const [what, selector, values] of [['sample-type switch', '[data-testid=sample-type]', sampleTypes], ['focus change', '[data-testid=focus]', focus]]) {
    const times = [];
    for (let i = 0; i < n; i++) times.push(await change(selector, values[i % 2]));
    out[what] = { times, values };
  }
  return out;
}

/// The `q` quantile of `xs` (nearest rank).
export function quantile(xs, q) {
  const v = [...xs].sort((a, b) => a - b);
  return v[Math.min(v.length - 1, Math.floor(q * v.length))];
}
