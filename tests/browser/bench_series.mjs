// The heap-over-time benchmark (`cargo xtask bench-viewer --series`): a generated
// serial capture of 10,000 snapshots (the QEMU demo firmware's own snapshot files,
// COBS-framed as the device frames them, repeated in order) opened with the firmware's
// ELF in headless Chromium, as a user opens it. Measures, medians of RUNS runs:
//   - file chosen → chart drawn (the target: ≤ 1 s);
//   - file chosen → the growing functions' areas drawn (every point symbolized);
//   - file chosen → flame graph of the last point painted;
//   - click on a point → its flame graph painted;
//   - the importer converting one snapshot with the ELF in wasm (ELF parsed, snapshot
//     decoded and symbolized, in the worker: the median of five clicks per run), against
//     `heapsnap convert SNAPSHOT --elf ELF` natively (release build, wall time of the
//     process, median of 5) on the same snapshot and ELF: the ratio (target ≤ 3×); and
//     the round trip of a click's request to the worker.
// Usage: node bench_series.mjs WWW OUT_DIR FIRMWARE_OUT ELF [FRAMES]
// (BENCH_HEAPSNAP = the release heapsnap). Prints a table; writes OUT_DIR/series.json.
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { serve, launch } from './lib.mjs';

const [www, outDir, fwOut, elf, framesArg] = process.argv.slice(2);
const FRAMES = Number(framesArg || 10000);
const RUNS = 3;
const heapsnap = process.env.BENCH_HEAPSNAP;
if (!heapsnap) throw new Error('BENCH_HEAPSNAP is not set (the release heapsnap)');
fs.mkdirSync(outDir, { recursive: true });

// COBS (what sampler-core's framed encoder writes: the encoded bytes, then 0x00).
function cobs(bytes) {
  const out = [0];
  let code = 0;
  let at = 1;
  for (const b of bytes) {
    if (b === 0) {
      out[code] = at - code;
      code = out.length;
      out.push(0);
      at = out.length;
      continue;
    }
    out.push(b);
    at = out.length;
    if (at - code === 0xff) {
      out[code] = 0xff;
      code = out.length;
      out.push(0);
      at = out.length;
    }
  }
  out[code] = at - code;
  out.push(0);
  return Buffer.from(out);
}

const snaps = fs.readdirSync(fwOut).filter((f) => /^snap-\d+\.bin$/.test(f)).sort().map((f) => path.join(fwOut, f));
if (!snaps.length) throw new Error(`no snap-*.bin in ${fwOut}: run \`cargo xtask firmware\``);
const framed = snaps.map((s) => cobs(fs.readFileSync(s)));
const capture = path.join(outDir, `series-${FRAMES}.cobs`);
{
  const parts = [];
  for (let i = 0; i < FRAMES; i++) parts.push(framed[i % framed.length]);
  fs.writeFileSync(capture, Buffer.concat(parts));
}
const captureSize = fs.statSync(capture).size;

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

const server = await serve(www);
const browser = await launch();
const runs = [];
try {
  for (let run = 0; run < RUNS; run++) {
    const page = await browser.newPage({ viewport: { width: 1200, height: 760 }, deviceScaleFactor: 1 });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${server.url}/index.html`);
    await page.waitForSelector('[data-testid=file-input]', { state: 'attached' });
    // Stamps taken in the page, on the page's clock.
    await page.evaluate(() => {
      window.__stamps = {};
      new MutationObserver(() => {
        const s = window.__stamps;
        const now = performance.now();
        if (!s.chart && document.querySelector('[data-testid=series-chart]')) s.chart = now;
        if (!s.areas && document.querySelector('[data-testid=series-legend][data-complete="1"]')) s.areas = now;
      }).observe(document.body, { childList: true, subtree: true });
      document.querySelector('[data-testid=file-input]').addEventListener('change', () => {
        if (!window.__stamps.chosen) window.__stamps.chosen = performance.now();
      }, true);
    });
    await page.setInputFiles('[data-testid=file-input]', [capture, elf]);
    await page.waitForSelector('[data-testid=series-legend][data-complete="1"]', { timeout: 300000 });
    await page.waitForFunction(() => performance.getEntriesByName('heapsnap:flame-painted').length >= 1, null, { timeout: 300000 });
    const t = await page.evaluate(() => ({
      ...window.__stamps,
      painted: performance.getEntriesByName('heapsnap:flame-painted')[0].startTime,
      error: document.querySelector('[data-testid=series-legend] .series-error')?.textContent ?? null,
      points: Number(document.querySelector('[data-testid=series-chart]').dataset.points),
      phases: window.__heapsnapSeriesPhases,
      first: performance.getEntriesByName('heapsnap:series-first')[0]?.duration,
    }));
    if (t.error) throw new Error(`the areas failed: ${t.error}`);
    if (t.points !== FRAMES) throw new Error(`the chart has ${t.points} points, not ${FRAMES}`);
    // A click in the middle of the chart: that point's flame graph.
    const hit = await page.$('[data-testid=series-hit]');
    const box = await hit.boundingBox();
    const before = await page.evaluate(() => performance.getEntriesByName('heapsnap:flame-painted').length);
    const clickAt = await page.evaluate(() => performance.now());
    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    await page.waitForFunction((n) => performance.getEntriesByName('heapsnap:flame-painted').length > n, before, { timeout: 120000 });
    const clicked = await page.evaluate(() => {
      const p = performance.getEntriesByName('heapsnap:flame-painted');
      return p[p.length - 1].startTime;
    });
    // Four more points (the worker's code warm, as a user's clicks find it).
    for (const at of [0.1, 0.3, 0.7, 0.9]) {
      const n = await page.evaluate(() => performance.getEntriesByName('heapsnap:flame-painted').length);
      await page.mouse.click(box.x + box.width * at, box.y + box.height / 2);
      await page.waitForFunction((k) => performance.getEntriesByName('heapsnap:flame-painted').length > k, n, { timeout: 120000 });
    }
    const trip = await page.evaluate(() => performance.getEntriesByName('heapsnap:series-frame').map((m) => m.duration));
    const convert = await page.evaluate(() => performance.getEntriesByName('heapsnap:series-convert').map((m) => m.duration));
    if (errors.length) throw new Error(`errors in the page: ${errors.join('; ')}`);
    runs.push({
      chart: t.chart - t.chosen,
      areas: t.areas - t.chosen,
      firstFlame: t.painted - t.chosen,
      click: clicked - clickAt,
      wasmConvert: median(convert),
      roundTrip: median(trip),
      first: t.first,
      phases: t.phases,
    });
    await page.close();
  }
} finally {
  await browser.close();
  server.close();
}

// Natively: the same snapshot (the point clicked is one of the firmware's files) and
// ELF through the release CLI, wall time of the whole process.
const native = [];
for (let i = 0; i < 5; i++) {
  const snap = snaps[Math.floor(FRAMES / 2) % snaps.length];
  const t0 = process.hrtime.bigint();
  execFileSync(heapsnap, ['convert', snap, '--elf', elf, '-o', path.join(outDir, 'native.pb.gz')]);
  native.push(Number(process.hrtime.bigint() - t0) / 1e6);
}

const m = (k) => median(runs.map((r) => r[k]));
const result = {
  date: new Date().toISOString(),
  frames: FRAMES,
  captureBytes: captureSize,
  runs,
  median: { chart: m('chart'), areas: m('areas'), firstFlame: m('firstFlame'), click: m('click'), wasmConvert: m('wasmConvert'), roundTrip: m('roundTrip'), first: m('first') },
  nativeConvert: median(native),
};
result.ratio = result.median.wasmConvert / result.nativeConvert;
fs.writeFileSync(path.join(outDir, 'series.json'), JSON.stringify(result, null, 1));
const ms = (v) => `${v.toFixed(0)} ms`;
console.log(`heap over time: ${FRAMES} snapshots (${(captureSize / 1048576).toFixed(1)} MB capture) + ${path.basename(elf)}, medians of ${RUNS} runs`);
console.log(`  file chosen → chart drawn          ${ms(result.median.chart)}   (target ≤ 1000 ms)`);
const ph = runs[Math.floor(RUNS / 2)].phases || {};
console.log(`    in the importer's worker: wasm started ${ms(ph.wasm ?? NaN)}, capture read ${ms(ph.read ?? NaN)}, ELF parsed ${ms(ph.elf ?? NaN)}, frames decoded ${ms(ph.decode ?? NaN)}`);
console.log(`  file chosen → growing areas drawn  ${ms(result.median.areas)}`);
console.log(`  file chosen → last point's flame   ${ms(result.median.firstFlame)}`);
console.log(`  click → that point's flame         ${ms(result.median.click)}`);
console.log(`  one snapshot + ELF converted: wasm ${ms(result.median.wasmConvert)} (in the worker; ${ms(result.median.roundTrip)} the click's round trip), native CLI ${ms(result.nativeConvert)} → ${result.ratio.toFixed(2)}× (target ≤ 3×)`);
console.log(`    the worker's first conversion (its code not yet optimized by the browser): ${ms(m('first'))} → ${(m('first') / result.nativeConvert).toFixed(2)}×`);
