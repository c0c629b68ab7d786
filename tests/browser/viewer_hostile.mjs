// Hostile files in the viewer (issue 12), in headless Chromium. Driven by
// tests/tests/viewer_hostile.rs, which makes the files and checks what this script
// reads off the page. Usage:
//   node viewer_hostile.mjs WWW OUT_DIR GOOD_PROFILE HOSTILE_FILE...
// For each hostile file: open it through the file input, and while it loads ask the
// page `1+1` over and over (each answer's round trip is recorded: the page must keep
// answering input); then read the error shown and the wasm memory's size. Last, open
// the good profile and wait for its flame graph. Writes OUT_DIR/result.json.
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch, waitMark } from './lib.mjs';

const [www, outDir, good, ...hostile] = process.argv.slice(2);
fs.mkdirSync(outDir, { recursive: true });
const result = { errors: [], files: [] };

const server = await serve(www);
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  page.on('pageerror', (e) => result.errors.push(String(e)));
  await page.goto(`${server.url}/index.html`);
  await page.waitForSelector('[data-testid=file-input]', { state: 'attached' });
  await page.waitForFunction(() => window.__heapsnapWasm !== undefined);
  const wasmBytes = () => page.evaluate(() => window.__heapsnapWasm.memory.buffer.byteLength);
  result.wasmBytesAtStart = await wasmBytes();

  // Opens `file` and pings the page until `done()` says the load is over.
  const load = async (file, done) => {
    const pings = [];
    const started = performance.now();
    await page.setInputFiles('[data-testid=file-input]', file);
    const deadline = started + 60000;
    do {
      if (performance.now() > deadline) throw new Error(`${file}: not done after 60 s`);
      const t = performance.now();
      await page.evaluate(() => 1 + 1);
      pings.push(performance.now() - t);
    } while (!(await done()));
    return { ms: performance.now() - started, pings: pings.length, maxPingMs: Math.max(0, ...pings) };
  };

  // A first load warms the page (the worker's script, the decoder's code tiered up
  // by V8): its slowest answer is reported, not held to the bound.
  const flames = () => page.evaluate(() => performance.getEntriesByName('heapsnap:flame-painted').length);
  result.warmup = await load(good, async () => (await flames()) > 0);

  for (const file of hostile) {
    const name = path.basename(file);
    const errorShown = () => page.evaluate((n) => {
      const e = document.querySelector('[data-testid=error]');
      return e !== null && e.textContent.includes(n);
    }, name);
    const timing = await load(file, errorShown);
    result.files.push({
      name,
      ...timing,
      error: await page.textContent('[data-testid=error]'),
      wasmBytes: await wasmBytes(),
    });
  }
  result.wholeFileDecodes = await page.evaluate(() => performance.getEntriesByName('heapsnap:whole-file-decode').length);

  // A good profile right after: it loads, and the error is gone.
  const before = await flames();
  result.good = await load(good, async () => (await flames()) > before);
  await waitMark(page, 'flame-painted', before + 1);
  result.errorAfterGood = await page.$('[data-testid=error]') !== null;
  result.goodStatus = await page.textContent('.status');
  result.wasmBytesAtEnd = await wasmBytes();
} finally {
  fs.writeFileSync(path.join(outDir, 'result.json'), JSON.stringify(result, null, 2));
  await browser.close();
  server.close();
}
