// The page keeps answering while a big good profile loads (issue 12), in headless
// Chromium. Driven by tests/tests/viewer_responsive.rs. Usage:
//   node viewer_responsive.mjs WWW OUT_DIR PROFILE_DIR
// The profiles are the viewer benchmark's (bench-550k.pb and .pb.gz in PROFILE_DIR,
// made by its generator, gen_profile.mjs, when missing). For each: open it through the
// file input and, until its flame graph is painted, ask the page every 20 ms whether it
// is (each round trip into the page recorded: the page must keep answering), while the
// page records its long tasks (PerformanceObserver 'longtask', each placed between the
// performance marks of the load) and how late a 20 ms timer fires. Writes
// OUT_DIR/result.json.
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch } from './lib.mjs';
import { generate } from './gen_profile.mjs';

const [www, outDir, profileDir] = process.argv.slice(2);
fs.mkdirSync(outDir, { recursive: true });
const result = { errors: [], files: [] };
const files = ['bench-550k.pb', 'bench-550k.pb.gz'].map((f) => path.join(profileDir, f));
if (!files.every((f) => fs.existsSync(f))) {
  fs.mkdirSync(profileDir, { recursive: true });
  const g = generate();
  fs.writeFileSync(files[0], g.raw);
  fs.writeFileSync(files[1], g.gz);
}

const server = await serve(www);
const browser = await launch();
try {
  for (const file of files) {
    // A fresh page per file: each load is timed from a cold start, as a user opens it.
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    page.on('pageerror', (e) => result.errors.push(String(e)));
    await page.goto(`${server.url}/index.html`);
    await page.waitForSelector('[data-testid=file-input]', { state: 'attached' });
    await page.waitForFunction(() => window.__heapsnapWasm !== undefined);
    await page.evaluate(() => {
      window.__long = [];
      new PerformanceObserver((l) => window.__long.push(...l.getEntries().map((e) => [e.startTime, e.duration])))
        .observe({ type: 'longtask' });
      // A timer every 20 ms: how late it fires is how long the page could not answer.
      window.__late = 0;
      let due = performance.now() + 20;
      const tick = () => {
        const now = performance.now();
        window.__late = Math.max(window.__late, now - due);
        due = now + 20;
        window.__timer = setTimeout(tick, 20);
      };
      window.__timer = setTimeout(tick, 20);
    });
    const painted = () => page.evaluate(() => performance.getEntriesByName('heapsnap:flame-painted').length > 0
      || document.querySelector('[data-testid=error]') !== null);
    const pings = [];
    const started = performance.now();
    await page.setInputFiles('[data-testid=file-input]', file);
    const deadline = started + 120000;
    for (;;) {
      if (performance.now() > deadline) throw new Error(`${file}: no flame graph after 120 s`);
      const t = performance.now();
      const done = await painted();
      pings.push(performance.now() - t);
      if (done) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const ms = performance.now() - started;
    const m = await page.evaluate(() => {
      clearTimeout(window.__timer);
      const marks = performance.getEntriesByType('mark').filter((e) => e.name.startsWith('heapsnap:'))
        .map((e) => [e.name.slice(9), e.startTime]);
      // Each long task with the mark it follows (where in the load it ran).
      const longTasks = window.__long.map(([start, duration]) => {
        const before = marks.filter(([, t]) => t <= start).at(-1);
        const after = marks.find(([, t]) => t > start);
        return { start, duration, after: before ? before[0] : 'start', before: after ? after[0] : 'end' };
      });
      const c = document.querySelector('[data-testid=flame-graph]');
      let pixels = 0;
      if (c) {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        for (let i = 3; i < d.length; i += 4) if (d[i]) pixels++;
      }
      const e = document.querySelector('[data-testid=error]');
      return { marks, longTasks, lateMs: window.__late, pixels, error: e && e.textContent };
    });
    result.files.push({
      name: path.basename(file), ms, pings: pings.length, maxPingMs: Math.max(0, ...pings), ...m,
    });
    await page.close();
  }
} finally {
  fs.writeFileSync(path.join(outDir, 'result.json'), JSON.stringify(result, null, 2));
  await browser.close();
  server.close();
}
