// heapsnap against the floor and its peers, in one run (`cargo xtask bench-viewer
// --peers`; `--short` is the test command's guard). Every input is loaded through each
// tool's own file input in headless Chromium (a fresh browser per run, so the renderer's
// peak RSS is that run's), and natively `heapsnap top` runs against `pprof -top`:
//
//   floor        the browser's own inflate (DecompressionStream into a discarded sink)
//                plus one pass over the protobuf fields in wasm (bench-floor, the
//                viewer's own field reader); natively `gzip -dc | bench-floor`.
//   heapsnap     the viewer (www/), file chosen → first flame graph painted;
//                `heapsnap top` natively.
//   speedscope   the npm package's built site, served locally, file chosen through its
//                file input → its flame chart mounted and drawn.
//   pprof        `pprof -http` (Go's, golang-go) started → its flame graph page rendered
//                in the same Chromium; `pprof -top` natively.
//
// Each browser run is checked to have rendered: a screenshot (kept under OUT/shots)
// must hold enough coloured pixels, so a peer that failed never looks fast; a native
// run must exit 0 and print a table. Then each tool's flame graph is hovered and zoomed
// as its users do (heapsnap's every run, a peer's first; `flameInteraction` in
// lib.mjs): the work per hover and per zoom step (p50, p99), per animation frame and the
// frame interval (p99), checked to have shown and changed something. Then (full run
// only) heapsnap's sample type is switched and its focus changed a few times
// (`settingChanges` in lib.mjs: each change to the redrawn flame graph, checked to have
// redrawn and changed the total shown), with a focus regex chosen per input from its
// function names; the peers get none (see the README: speedscope has no such controls,
// pprof's reload a page served anew).
//
// Usage: node bench_peers.mjs WWW OUT_DIR [--short]
// BENCH_INPUTS=name,… runs those inputs only; BENCH_RUNS, BENCH_PEER_RUNS, BENCH_TIMEOUT_S
// and BENCH_MEM_CAP_GB change the runs, the time limit and the memory cap of each run.
// Environment: HEAPSNAP_NODE_MODULES (playwright-core), BENCH_SPEEDSCOPE (speedscope's
// dist/release), BENCH_FLOOR_WASM, BENCH_GO_HEAP (tests/go/heapbench, built); full run
// only: BENCH_FLOOR_BIN, BENCH_HEAPSNAP, BENCH_PPROF, and BENCH_FIRMWARE (the QEMU demo
// firmware's profile, converted with its ELF by the xtask; without it that input is left
// out).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { spawn, spawnSync } from 'node:child_process';
import { serve, launch, flameInteraction, settingChanges, FLAME_TOOLS, quantile } from './lib.mjs';
import { generate } from './gen_profile.mjs';

const args = process.argv.slice(2);
const short = args.includes('--short');
const [www, outDir] = args.filter((a) => !a.startsWith('--'));
const env = (k) => {
  if (!process.env[k]) throw new Error(`${k} is not set (cargo xtask bench-viewer --peers sets it)`);
  return process.env[k];
};
const SPEEDSCOPE = env('BENCH_SPEEDSCOPE');
const FLOOR_WASM = env('BENCH_FLOOR_WASM');
const GO_HEAP = env('BENCH_GO_HEAP');
const [FLOOR_BIN, HEAPSNAP, PPROF] = short ? [] : [env('BENCH_FLOOR_BIN'), env('BENCH_HEAPSNAP'), env('BENCH_PPROF')];
const FIRMWARE = short ? undefined : process.env.BENCH_FIRMWARE;
const RUNS = Number(process.env.BENCH_RUNS || 3);
// Peers are slow on the large inputs: one run each unless asked (the short run: RUNS).
const PEER_RUNS = Number(process.env.BENCH_PEER_RUNS || (short ? RUNS : 1));
const TIMEOUT = Number(process.env.BENCH_TIMEOUT_S || 240) * 1000;
// A run over this much memory is stopped and reported as failed (pprof takes 7 GB for
// a 5 MB profile: the large inputs would take the shared machine down with it).
const MEM_CAP = Number(process.env.BENCH_MEM_CAP_GB || 6) * 2 ** 30;
const shots = path.join(outDir, 'shots');
fs.mkdirSync(shots, { recursive: true });

// ---------------------------------------------------------------------------- inputs

/// Go runtime heap profiles of tests/go/heapbench at MemProfileRate = 1 (TREES sets the
/// size: 10 ≈ 1 MB, 55 ≈ 5 MB, 330 ≈ 30 MB gzipped), the synthetic profile of the
/// viewer benchmark, a 1M-sample / 100k-stack one and a deep-stack one, each written
/// once into OUT_DIR; and the QEMU demo firmware's profile (BENCH_FIRMWARE, copied anew
/// each run). `focus`: two regexes over each input's function names that match
/// different parts of it, for the focus changes.
function inputs() {
  const goFocus = ['main\\.build', 'main\\.evalFormat'];
  const synFocus = ['pkg7\\.', 'pkg8\\.'];
  const go = (name, trees) => ({
    name,
    focus: goFocus,
    make: (p) => {
      const r = spawnSync(GO_HEAP, [p, String(trees)], { stdio: 'inherit' });
      if (r.status !== 0) throw new Error(`${GO_HEAP} ${p} ${trees} failed (${r.status ?? r.signal})`);
    },
  });
  const synthetic = (name, opts, gz) => ({
    name,
    focus: synFocus,
    make: (p) => { const g = generate(opts); fs.writeFileSync(p, gz ? g.gz : g.raw); },
  });
  if (short) return [go('go-heap-1mb.pb.gz', 10)];
  const only = process.env.BENCH_INPUTS?.split(',');
  return [
    go('go-heap-1mb.pb.gz', 10),
    go('go-heap-5mb.pb.gz', 55),
    go('go-heap-30mb.pb.gz', 330),
    synthetic('synthetic-550k.pb.gz', {}, true),
    synthetic('synthetic-550k.pb', {}, false),
    synthetic('synthetic-1m.pb.gz', { samples: 1_000_000, stacks: 100_000 }, true),
    synthetic('deep-500.pb.gz', { samples: 60_000, stacks: 20_000, depth: 500 }, true),
    ...(FIRMWARE ? [{
      name: 'qemu-firmware.pb.gz',
      focus: ['remember_message', 'Router::new'],
      fresh: true,
      make: (p) => fs.copyFileSync(FIRMWARE, p),
    }] : []),
  ].filter((i) => !only || only.includes(i.name));
}

function prepare(input) {
  const p = path.join(outDir, input.name);
  if (input.fresh) fs.rmSync(p, { force: true });
  if (!fs.existsSync(p)) {
    const t = Date.now();
    input.make(p + '.tmp');
    fs.renameSync(p + '.tmp', p);
    console.error(`generated ${input.name} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  }
  const gz = fs.readFileSync(p).subarray(0, 2).equals(Buffer.from([0x1f, 0x8b]));
  const size = fs.statSync(p).size;
  const raw = gz ? spawnSync('sh', ['-c', 'gzip -dc "$1" | wc -c', '_', p]).stdout.toString().trim() : size;
  return { ...input, path: p, gz, size, raw: Number(raw) };
}

// ------------------------------------------------------------------- measuring tools

/// Pids of this process's descendants whose command line has `needle`.
function descendants(needle) {
  const kids = new Map();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!kids.has(ppid)) kids.set(ppid, []);
      kids.get(ppid).push(Number(d));
    } catch { /* exited */ }
  }
  const out = [];
  const walk = (p) => {
    for (const k of kids.get(p) || []) {
      try {
        if (fs.readFileSync(`/proc/${k}/cmdline`, 'utf8').includes(needle)) out.push(k);
      } catch { /* exited */ }
      walk(k);
    }
  };
  walk(process.pid);
  return out;
}

/// Peak resident set (VmHWM) of a live process, bytes (0 when it is gone).
function peakRss(pid) {
  try {
    const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmHWM:\s+(\d+) kB/);
    return m ? Number(m[1]) * 1024 : 0;
  } catch { return 0; }
}

/// Private (anonymous) resident memory of a live process, bytes.
function anonRss(pid) {
  try {
    const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/RssAnon:\s+(\d+) kB/);
    return m ? Number(m[1]) * 1024 : 0;
  } catch { return 0; }
}

/// Polls the private resident memory of this run's renderer processes (one browser
/// at a time; shared pages such as Chromium's own code are left out, so the figure is
/// what the page made) plus `extra()`'s resident memory (a peer's server), until
/// stopped; resolves to the peak of their sum. Over MEM_CAP it kills them all and
/// `over()` says so (the page then crashes and the run fails).
function pollRendererMemory(extra = () => 0) {
  let peak = 0, on = true, pids = [], listed = 0, over = false;
  const done = (async () => {
    while (on) {
      if (Date.now() - listed > 250) { pids = descendants('--type=renderer'); listed = Date.now(); }
      const [e, pid] = [extra(), extra.pid?.()];
      const now = pids.reduce((s, p) => s + anonRss(p), 0) + e;
      peak = Math.max(peak, now);
      if (now > MEM_CAP && !over) {
        over = true;
        for (const p of [...pids, pid].filter(Boolean)) { try { process.kill(p, 'SIGKILL'); } catch { /* gone */ } }
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    return peak;
  })();
  const stop = () => { on = false; return done; };
  stop.over = () => over;
  return stop;
}

/// The error of a run that `stopRss` stopped for its memory, else `e`.
const capped = (stopRss, e) => (stopRss.over?.() ? new Error(`over the memory cap of ${(MEM_CAP / 2 ** 30).toFixed(1)} GiB (stopped)`) : e);

/// Polls the page's memory (V8 heap used + embedder + array-buffer backing stores,
/// where the file's bytes and wasm memory live) until stopped; resolves to the peak.
function pollPageMemory(cdp) {
  let peak = 0, on = true;
  const done = (async () => {
    while (on) {
      try {
        // Bounded: a crashed page never answers.
        const h = await Promise.race([cdp.send('Runtime.getHeapUsage'), new Promise((_, no) => setTimeout(() => no(new Error('no answer')), 1000))]);
        peak = Math.max(peak, h.usedSize + (h.embedderHeapUsedSize || 0) + (h.backingStorageSize || 0));
      } catch { /* page busy or closing */ }
      await new Promise((r) => setTimeout(r, 20));
    }
    return peak;
  })();
  return () => { on = false; return done; };
}

/// Coloured pixels in a screenshot (channels differing by > 24: flame-graph boxes,
/// not text, white, black or grey chrome), counted by Chromium's own PNG decoder.
async function ink(page, png) {
  return page.evaluate(async (b64) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.width; c.height = img.height;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 24) n++;
    }
    return n;
  }, png.toString('base64'));
}

const INK_MIN = 2000;

/// Bytes of the page's wasm memory (heapsnap's viewer, the floor; speedscope has none
/// for pprof files).
const wasmBytes = () => (window.__heapsnapWasm || window.__floorWasm)?.memory.buffer.byteLength || 0;

/// A fresh browser and page; the page records the time of the first `change` event on
/// any element (capture phase on the document: before the app's own handler).
async function freshPage() {
  const browser = await launch(['--enable-precise-memory-info']);
  const page = await browser.newPage({ viewport: { width: 1360, height: 860 } });
  await page.addInitScript(() => {
    document.addEventListener('change', () => { window.__t0 ??= performance.now(); }, true);
  });
  page.setDefaultTimeout(TIMEOUT);
  const cdp = await page.context().newCDPSession(page);
  // A page whose renderer died (out of memory, or stopped at the memory cap) answers no
  // wait: every wait below races this.
  const crashed = new Promise((_, reject) => page.on('crash', () => reject(new Error('the page crashed'))));
  crashed.catch(() => {});
  const guard = (p) => Promise.race([p, crashed]);
  return { browser, page, cdp, guard };
}

/// One browser run of a tool whose site is at `url`: choose `file` in `input`, wait for
/// `painted` (a page function returning true once the flame graph is drawn), then one
/// more animation frame; returns time, page memory, renderer RSS, coloured pixels.
async function viewerRun(tool, url, input, file, painted, shot, phases = () => '', interact = null) {
  const { browser, page, cdp, guard } = await freshPage();
  let stop = async () => 0, stopRss = stop;
  try {
    await page.goto(url);
    await page.waitForSelector(input, { state: 'attached' });
    [stop, stopRss] = [pollPageMemory(cdp), pollRendererMemory()];
    await guard(page.setInputFiles(input, file));
    await guard(page.waitForFunction(painted, null, { timeout: TIMEOUT, polling: 'raf' }));
    const ms = await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r(performance.now() - window.__t0))));
    // Wasm memory is not in V8's heap figures; it never shrinks, so its size now is its peak.
    const pageMem = (await stop()) + (await page.evaluate(wasmBytes));
    const rss = await stopRss();
    const png = await page.screenshot({ path: shot });
    const out = { tool, ms, pageMem, rss, ink: await ink(page, png), phases: await page.evaluate(phases) };
    return interact ? { ...out, ...(await interact(page)) } : out;
  } catch (e) {
    throw capped(stopRss, e);
  } finally {
    await stop();
    await stopRss();
    await browser.close();
  }
}

/// Hovering and zooming the loaded flame graph as a user of `tool` does (100 hovers, 10
/// zooms in and out; `flameInteraction` in lib.mjs, the same timing for every tool),
/// after the first flame graph is measured; speedscope in the short run: 30 and 4 (its
/// frames take ~50 ms each here: the test command's time). A failure here (or a script
/// whose hovers showed nothing, whose zooms changed nothing) leaves the figures out,
/// not the run.
const INTERACTION_KEYS = ['zoomP50', 'zoomP99', 'hoverP50', 'hoverP99', 'frameWorkP99', 'frameP99', 'switchMs', 'focusMs'];
const interaction = (tool, { hovers = 100, zooms = 10 } = {}) => async (page) => {
  try {
    const t = await flameInteraction(page, { hovers, zooms, tool: FLAME_TOOLS[tool] });
    return {
      zoomP50: quantile(t.zoom, 0.5), zoomP99: quantile(t.zoom, 0.99),
      hoverP50: quantile(t.hover, 0.5), hoverP99: quantile(t.hover, 0.99),
      frameWorkP99: quantile(t.frames, 0.99), frameP99: quantile(t.intervals, 0.99),
      checked: `${t.shown}/${hovers} hovers showed a frame, ${t.zoomed}/${zooms} zooms changed the view, ${t.back}/${zooms} zoomed out`,
    };
  } catch (e) {
    console.error(`  ${tool}: hovering and zooming failed: ${e.message.split('\n')[0]}`);
    return {};
  }
};

/// After hovering and zooming (full run): SETTING_CHANGES sample-type switches and as
/// many focus changes between the input's two regexes (`settingChanges` in lib.mjs);
/// the median of each. A failure leaves the figures out, as for the interaction.
const SETTING_CHANGES = 4;
const settings = (focus) => async (page) => {
  try {
    const c = await settingChanges(page, { focus, n: SETTING_CHANGES, timeout: TIMEOUT });
    const drawn = (what) => quantile(c[what].times.map((x) => x.drawn), 0.5);
    return {
      switchMs: drawn('sample-type switch'), focusMs: drawn('focus change'),
      settingsChecked: `${SETTING_CHANGES} switches ${c['sample-type switch'].values.join(' ⇄ ')}, ${SETTING_CHANGES} focus changes ${c['focus change'].values.join(' ⇄ ')}: ${['sample-type switch', 'focus change'].map((w) => c[w].times.map((x) => x.drawn.toFixed(0)).join(', ')).join(' / ')} ms`,
    };
  } catch (e) {
    console.error(`  heapsnap: changing the sample type and focus failed: ${e.message.split('\n')[0]}`);
    return {};
  }
};

const heapsnapRun = (urls, input, shot) =>
  viewerRun('heapsnap', urls.heapsnap, '[data-testid=file-input]', input.path,
    () => performance.getEntriesByName('heapsnap:flame-painted').length > 0, shot,
    // Where the time goes: the viewer's own marks, from the file chosen.
    () => ['decoded', 'indexed', 'flame-built', 'flame-drawing', 'flame-painted']
      .map((n) => `${n} ${(performance.getEntriesByName(`heapsnap:${n}`)[0]?.startTime - window.__t0).toFixed(0)}`).join(', '),
    async (page) => {
      const zoomHover = await interaction('heapsnap')(page);
      return short ? zoomHover : { ...zoomHover, ...(await settings(input.focus)(page)) };
    });

// speedscope mounts its flame chart (two canvases besides the shared WebGL one) once
// the import is done, and draws it on the next animation frame. Hovering and zooming
// in its first run only (the short run's time).
const speedscopeRun = (urls, file, shot, i) =>
  viewerRun('speedscope', urls.speedscope, '#file', file,
    () => document.querySelectorAll('canvas').length >= 3, shot, () => '',
    i === 0 ? interaction('speedscope', short ? { hovers: 30, zooms: 4 } : {}) : null);

/// The browser floor: inflate the chosen file with DecompressionStream into a
/// discarded sink (a raw file: read it), then the best of three passes of the floor's
/// wasm over the inflated bytes (the first runs in V8's baseline tier: one call, no
/// tier-up within it). Memory: the page's peak with the inflated bytes in wasm.
async function floorRun(urls, file) {
  const { browser, page, cdp, guard } = await freshPage();
  let stop = async () => 0, stopRss = stop;
  try {
    await page.goto(urls.floor);
    await page.waitForFunction(() => window.__floorWasm);
    [stop, stopRss] = [pollPageMemory(cdp), pollRendererMemory()];
    await guard(page.setInputFiles('#file', file));
    const r = await guard(page.waitForFunction(() => window.__floor, null, { timeout: TIMEOUT }).then((h) => h.jsonValue()));
    if (r.error) throw new Error(`floor: ${r.error}`);
    if (!(r.samples > 0)) throw new Error(`floor: the pass read no sample (${r.samples})`);
    return { tool: 'floor', ms: r.read + r.pass, read: r.read, pass: r.pass, samples: r.samples, pageMem: (await stop()) + (await page.evaluate(wasmBytes)), rss: await stopRss(), ink: Infinity };
  } finally {
    await stop();
    await stopRss();
    await browser.close();
  }
}

const FLOOR_HTML = `<!doctype html><meta charset=utf-8><title>floor</title><input type=file id=file>
<script type=module>
const { instance } = await WebAssembly.instantiateStreaming(fetch('floor.wasm'));
const w = instance.exports;
window.__floorWasm = w;
document.getElementById('file').addEventListener('change', async (e) => {
  try {
    const f = e.target.files[0];
    const gz = new Uint8Array(await f.slice(0, 2).arrayBuffer());
    const isGz = gz[0] === 0x1f && gz[1] === 0x8b;
    const t0 = performance.now();
    let len = 0;
    if (isGz) {
      const rd = f.stream().pipeThrough(new DecompressionStream('gzip')).getReader();
      for (;;) { const { done, value } = await rd.read(); if (done) break; len += value.length; }
    } else {
      len = (await f.arrayBuffer()).byteLength;
    }
    const read = performance.now() - t0;
    // Untimed: the inflated bytes into wasm memory for the pass.
    const ptr = w.floor_buffer(len);
    let off = 0;
    const src = isGz ? f.stream().pipeThrough(new DecompressionStream('gzip')) : f.stream();
    const rd = src.getReader();
    for (;;) { const { done, value } = await rd.read(); if (done) break; new Uint8Array(w.memory.buffer, ptr + off, value.length).set(value); off += value.length; }
    let pass = Infinity, samples = 0;
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      samples = w.floor_pass();
      pass = Math.min(pass, performance.now() - t);
    }
    window.__floor = samples < 0 ? { error: 'not protobuf' } : { read, pass, samples, sum: w.floor_sum() };
  } catch (err) { window.__floor = { error: String(err) }; }
});
</script>`;

/// pprof -http: started → its flame-graph page (/ui/flamegraph) rendered in Chromium.
/// Memory: pprof's peak RSS plus the renderer's. `i` = 0: then hovered and zoomed.
async function pprofHttpRun(file, shot, i) {
  const port = await new Promise((res) => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
  const { browser, page, guard } = await freshPage();
  let child;
  const server = () => (child ? anonRss(child.pid) : 0);
  server.pid = () => child?.pid;
  const stopRss = pollRendererMemory(server);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pprof-'));
  const t0 = performance.now();
  child = spawn(PPROF, [`-http=127.0.0.1:${port}`, '-no_browser', file], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, PPROF_TMPDIR: tmp } });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  let exited = null;
  child.on('exit', (c, s) => { exited = `${c ?? s}`; });
  try {
    for (;;) {
      if (exited !== null) throw new Error(`pprof -http exited (${exited}): ${stderr.trim()}`);
      if (performance.now() - t0 > TIMEOUT) throw new Error('pprof -http: timed out');
      try { await page.goto(`http://127.0.0.1:${port}/ui/flamegraph`, { timeout: TIMEOUT }); break; } catch { await new Promise((r) => setTimeout(r, 50)); }
    }
    // d3-flame-graph adds its boxes without a width, then grows them in a transition
    // (~0.3 s): timed to the first frame with the root box drawn, the screenshot taken
    // once it has its full width (the boxes were blank in a shot taken earlier).
    const rootWidth = () => Number(document.querySelector('#chart g.frame rect')?.getAttribute('width')) || 0;
    await guard(page.waitForFunction(rootWidth, null, { timeout: TIMEOUT, polling: 'raf' }));
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(r)));
    const ms = performance.now() - t0;
    await guard(page.waitForFunction(`(${rootWidth})() >= document.querySelector('#chart svg').getBoundingClientRect().width - 1`, null, { timeout: TIMEOUT, polling: 'raf' }));
    const pprofRss = peakRss(child.pid);
    const rss = await stopRss();
    const png = await page.screenshot({ path: shot });
    const out = { tool: 'pprof', ms, pageMem: NaN, rss, pprofRss, ink: await ink(page, png) };
    // Hovering and zooming in its first run (the page's own work; pprof has served it).
    return i === 0 ? { ...out, ...(await interaction('pprof')(page)) } : out;
  } catch (e) {
    throw capped(stopRss, e);
  } finally {
    await stopRss();
    child.kill();
    await browser.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/// A native command under /usr/bin/time: wall seconds and peak RSS (its own or its
/// largest child's); it must exit 0 and print at least `lines` lines.
function timed(tool, argv, lines) {
  // The memory cap as an address-space limit: a Go or Rust program over it fails to
  // allocate and exits non-zero.
  const cap = ['prlimit', `--as=${MEM_CAP}`, '--'];
  const r = spawnSync('/usr/bin/time', ['-f', '@@time %e %M', ...cap, ...argv], { maxBuffer: 1 << 30, timeout: TIMEOUT });
  const err = r.stderr.toString();
  const m = err.match(/@@time ([\d.]+) (\d+)/);
  const out = r.stdout.toString().split('\n').filter(Boolean).length;
  if (r.status !== 0 || !m || out < lines) {
    throw new Error(`${argv.join(' ')}: status ${r.status ?? r.signal} (address space capped at ${(MEM_CAP / 2 ** 30).toFixed(1)} GiB, time at ${TIMEOUT / 1000} s), ${out} lines: ${err.replace(/@@time.*/, '').trim().slice(0, 300)}`);
  }
  return { tool, ms: Number(m[1]) * 1000, rss: Number(m[2]) * 1024 };
}

// ------------------------------------------------------------------------- the run

const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmtSize = (b) => (b < 1e5 ? `${(b / 1e3).toFixed(1)} kB` : `${(b / 1e6).toFixed(1)} MB`);

/// `n` runs of `f`; the median of each figure, and the spread of the times.
async function repeat(n, f) {
  const runs = [];
  for (let i = 0; i < n; i++) {
    const r = await f(i);
    if (r.ink < INK_MIN) throw new Error(`${r.tool} did not render a flame graph (${r.ink} coloured pixels; see ${shots})`);
    runs.push(r);
  }
  const out = { ...runs[0] };
  for (const k of ['ms', 'pageMem', 'rss', 'ink', 'read', 'pass']) if (k in out) out[k] = med(runs.map((r) => r[k]));
  // The interaction's figures: the median over the runs that have them (a peer's first).
  for (const k of INTERACTION_KEYS) {
    const xs = runs.map((r) => r[k]).filter(Number.isFinite);
    out[k] = xs.length ? med(xs) : undefined;
  }
  out.all = runs.map((r) => r.ms);
  out.spread = Math.max(...out.all) - Math.min(...out.all);
  return out;
}

/// A tool's result, or its failure as a result that can never look fast.
async function attempt(f) {
  try { return await f(); } catch (e) { console.error(`  ${e.message.split('\n')[0]}`); return { failed: e.message.split('\n')[0] }; }
}

const cpu = (fs.readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/) || [])[1] || 'unknown CPU';
const machine = `${cpu}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB; Chromium ${spawnSync(process.env.CHROMIUM || '/usr/bin/chromium', ['--version']).stdout.toString().trim().replace(/^Chromium /, '')}; load average ${os.loadavg()[0].toFixed(2)} at start`;
const speedscopeVersion = JSON.parse(fs.readFileSync(path.join(SPEEDSCOPE, '../../package.json'), 'utf8')).version;

fs.writeFileSync(path.join(outDir, 'floor.html'), FLOOR_HTML);
const server = await serve(www, {
  '/floor/floor.html': path.join(outDir, 'floor.html'),
  '/floor/floor.wasm': FLOOR_WASM,
});
const ssServer = await serve(SPEEDSCOPE);
const urls = {
  heapsnap: `${server.url}/index.html`,
  floor: `${server.url}/floor/floor.html`,
  speedscope: `${ssServer.url}/index.html`,
};

const results = [];
try {
  for (const input of inputs().map(prepare)) {
    console.error(`\n${input.name}: ${fmtSize(input.size)}${input.gz ? `, ${fmtSize(input.raw)} raw` : ''}`);
    const shot = (tool) => path.join(shots, `${input.name}.${tool}.png`);
    const r = { input };
    r.floor = await attempt(() => repeat(RUNS, () => floorRun(urls, input.path)));
    r.heapsnap = await attempt(() => repeat(RUNS, () => heapsnapRun(urls, input, shot('heapsnap'))));
    r.speedscope = await attempt(() => repeat(PEER_RUNS, (i) => speedscopeRun(urls, input.path, shot('speedscope'), i)));
    if (!short) {
      r.pprof = await attempt(() => repeat(PEER_RUNS, (i) => pprofHttpRun(input.path, shot('pprof'), i)));
      const floorCmd = input.gz ? ['sh', '-c', 'gzip -dc "$1" | "$2"', '_', input.path, FLOOR_BIN] : ['sh', '-c', '"$2" < "$1"', '_', input.path, FLOOR_BIN];
      r.floorTop = await attempt(() => repeat(RUNS, () => ({ ...timed('floor', floorCmd, 1), ink: Infinity })));
      r.heapsnapTop = await attempt(() => repeat(RUNS, () => ({ ...timed('heapsnap', [HEAPSNAP, 'top', input.path], 5), ink: Infinity })));
      r.pprofTop = await attempt(() => repeat(PEER_RUNS, () => ({ ...timed('pprof', [PPROF, '-top', input.path], 5), ink: Infinity })));
    }
    for (const [k, v] of Object.entries(r)) {
      if (k !== 'input') console.error(`  ${k.padEnd(12)} ${v.failed ? `FAILED ${v.failed}` : `${v.ms.toFixed(0)} ms (runs ${v.all.map((x) => x.toFixed(0)).join(', ')}), page ${(v.pageMem / 1e6).toFixed(0)} MB, RSS ${(v.rss / 1e6).toFixed(0)} MB${v.phases ? ` (first run, ms after the file is chosen: ${v.phases})` : ''}${v.read !== undefined ? ` (inflate/read ${v.read.toFixed(0)} ms, pass ${v.pass.toFixed(0)} ms)` : ''}${v.checked ? `; hovering and zooming (first run): ${v.checked}` : ''}${v.settingsChecked ? `; settings (first run): ${v.settingsChecked}` : ''}`}`);
    }
    results.push(r);
  }
} finally {
  server.close();
  ssServer.close();
}

// ----------------------------------------------------------------------- the table

// 0 ms: a native run under /usr/bin/time's resolution (10 ms).
const fmtMs = (v) => (!Number.isFinite(v) ? '—' : v === 0 ? '< 10 ms' : v >= 10000 ? `${(v / 1000).toFixed(1)} s` : v < 100 ? `${v.toFixed(1)} ms` : `${v.toFixed(0)} ms`);
const fmtMB = (v) => (Number.isFinite(v) ? `${(v / 1e6).toFixed(0)} MB` : '—');
const cell = (r, key, fmt) => (!r ? '—' : r.failed ? 'failed' : fmt(r[key]));
const ratio = (h, o, key) => (!h || !o || h.failed || o.failed || !Number.isFinite(h[key]) || !(o[key] > 0) || !Number.isFinite(o[key]) ? '—' : `${(h[key] / o[key]).toFixed(2)}×`);
const rows = [];
for (const r of results) {
  const i = r.input;
  const label = `${i.name} (${fmtSize(i.size)}${i.gz ? `; ${fmtSize(i.raw)} raw` : ''})`;
  const line = (what, floor, heap, peers, key, fmt) => {
    rows.push([label, what, cell(floor, key, fmt), cell(heap, key, fmt), ratio(heap, floor, key),
      ...peers.flatMap((p) => [cell(p, key, fmt), ratio(heap, p, key)])]);
  };
  line('first flame graph', r.floor, r.heapsnap, [r.speedscope, r.pprof], 'ms', fmtMs);
  line('page memory (JS + wasm)', r.floor, r.heapsnap, [r.speedscope, r.pprof], 'pageMem', fmtMB);
  line('renderer peak private memory (+ pprof\'s peak RSS)', r.floor, r.heapsnap, [r.speedscope, r.pprof], 'rss', fmtMB);
  // Goal: p99 ≤ 16 ms; a frame interval cannot be under 16.7 ms (no frame dropped: ≤ 17).
  for (const [what, key] of [['zoom in/out: work per zoom step, p50', 'zoomP50'], ['zoom in/out: work per zoom step, p99', 'zoomP99'],
    ['hover: work per mousemove, p50', 'hoverP50'], ['hover: work per mousemove, p99', 'hoverP99'],
    ['main-thread work per animation frame while hovering and zooming, p99', 'frameWorkP99'],
    ['animation-frame interval while hovering and zooming, p99', 'frameP99']]) {
    line(what, undefined, r.heapsnap, [r.speedscope, r.pprof], key, fmtMs);
  }
  // Goal: ≤ 150 ms at 1M samples. heapsnap only: see the README for the peers.
  if (!short) {
    line(`sample-type switch → flame drawn, median of ${SETTING_CHANGES}`, undefined, r.heapsnap, [undefined, undefined], 'switchMs', fmtMs);
    line(`focus change → flame drawn, median of ${SETTING_CHANGES}`, undefined, r.heapsnap, [undefined, undefined], 'focusMs', fmtMs);
  }
  if (!short) {
    line('`top`, native: time', r.floorTop, r.heapsnapTop, [undefined, r.pprofTop], 'ms', fmtMs);
    line('`top`, native: peak RSS', r.floorTop, r.heapsnapTop, [undefined, r.pprofTop], 'rss', fmtMB);
  }
}
const head = ['input (gzipped size; raw)', 'figure', 'floor', 'heapsnap', 'heapsnap ÷ floor', `speedscope ${speedscopeVersion}`, 'heapsnap ÷ speedscope'];
if (!short) head.push('pprof (Go)', 'heapsnap ÷ pprof');
const table = [head, head.map(() => '---'), ...rows.map((r) => r.slice(0, head.length))].map((r) => `| ${r.join(' | ')} |`).join('\n');
console.log(`\n${new Date().toISOString().slice(0, 10)}, ${machine}.`);
console.log(`Median of ${RUNS} runs (floor, heapsnap) and ${PEER_RUNS} (peers); each browser run in a fresh headless Chromium; ` +
  `ratios are heapsnap's figure divided by the other's (below 1: heapsnap is faster or smaller). Screenshots: ${shots}\n`);
console.log(table);

let failed = results.some((r) => r.heapsnap.failed || r.floor.failed);
if (short) {
  // The guard: heapsnap's first flame must not be slower than speedscope's on the same
  // file, beyond the runs' own spread (the measured noise).
  for (const r of results) {
    const h = r.heapsnap, s = r.speedscope;
    if (h.failed || s.failed) { failed = true; continue; }
    const noise = Math.max(h.spread, s.spread);
    const ok = h.ms <= s.ms + noise;
    console.log(`\n${r.input.name}: heapsnap first flame ${fmtMs(h.ms)} vs speedscope ${fmtMs(s.ms)} (noise ±${fmtMs(noise)}): ${ok ? 'ok' : 'heapsnap is SLOWER than speedscope'}`);
    if (!ok) failed = true;
  }
}
if (failed) process.exit(1);
