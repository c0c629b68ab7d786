// End-to-end check of the viewer in headless Chromium. Driven by
// tests/tests/viewer_e2e.rs, which compares what this script reads off the page with
// `go tool pprof`. Usage:
//   node viewer_e2e.mjs WWW PROFILE MALFORMED SOURCE_FILE OUT_DIR
// Writes OUT_DIR/result.json and screenshots OUT_DIR/{flame,top,source}.png.
import fs from 'node:fs';
import zlib from 'node:zlib';
import path from 'node:path';
import { serve, launch, waitMark } from './lib.mjs';

const [www, profile, malformed, sourceFile, outDir] = process.argv.slice(2);
fs.mkdirSync(outDir, { recursive: true });
const result = { errors: [], consoleErrors: [], workers: [], sampleTypes: [], tables: {}, flamePixels: {} };

// The profile is also served, for the ?profile= preload that `cargo xtask demo` uses.
const server = await serve(www, { '/demo/preload.pb.gz': profile });
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1360, height: 860 }, deviceScaleFactor: 2 });
  page.on('pageerror', (e) => result.errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') result.consoleErrors.push(m.text()); });
  page.on('worker', (w) => result.workers.push(w.url()));
  await page.goto(`${server.url}/index.html`);
  await page.waitForSelector('[data-testid=file-input]', { state: 'attached' });

  // 1. A malformed file: the error is shown, the page keeps working.
  await page.setInputFiles('[data-testid=file-input]', malformed);
  await page.waitForSelector('[data-testid=error]');
  result.malformedError = await page.textContent('[data-testid=error]');

  // 2. The Go runtime's heap profile.
  await page.setInputFiles('[data-testid=file-input]', profile);
  await waitMark(page, 'flame-painted', 1);
  // The samples sorted by stack in the background after the first paint: every tree
  // below (each sample type, the focus) is built from that order.
  await waitMark(page, 'stacks-sorted', 1);
  result.errorAfterGoodFile = await page.$('[data-testid=error]') !== null;
  result.sampleTypes = await page.$$eval('[data-testid=sample-type] option', (os) => os.map((o) => o.value));
  result.defaultSampleType = await page.$eval('[data-testid=sample-type]', (s) => s.value);
  result.comments = await page.$$eval('[data-testid=comments] li', (ls) => ls.map((l) => l.textContent));

  const flamePixels = () => page.$eval('[data-testid=flame-graph]', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) n++;
    return { painted: n, width: c.width, height: c.height };
  });
  const showSampleType = async (st) => {
    await page.selectOption('[data-testid=sample-type]', st);
    await page.waitForFunction((s) => document.querySelector('.status')?.textContent.includes(`${s}:`), st);
  };
  const view = async (v) => {
    await page.click(`[data-view=${v}]`);
    await page.waitForSelector(v === 'flame' ? '[data-testid=flame-graph]' : v === 'top' ? '[data-testid=top-table]' : '[data-testid=source-view]');
  };
  const readTop = () => page.$$eval('[data-testid=top-row]', (rows) => rows.map((r) => {
    const v = [...r.querySelectorAll('td[data-value]')].map((td) => Number(td.dataset.value));
    return { name: r.dataset.name, flat: v[0], flatPct: v[1], sumPct: v[2], cum: v[3], cumPct: v[4] };
  }));

  // Hover shows a tooltip with name, value and percentage.
  const box = await page.$eval('[data-testid=flame-graph]', (c) => { const r = c.getBoundingClientRect(); return [r.x, r.y, r.width]; });
  await page.mouse.move(box[0] + box[2] / 2, box[1] + 30);
  await page.waitForSelector('.tooltip');
  result.tooltip = await page.textContent('.tooltip');
  await page.screenshot({ path: path.join(outDir, 'flame.png'), fullPage: true });
  await page.mouse.move(0, 0);

  for (const st of result.sampleTypes) {
    await view('flame');
    await showSampleType(st);
    result.flamePixels[st] = await flamePixels();
    await view('top');
    result.tables[st] = await readTop();
  }
  await showSampleType(result.defaultSampleType);
  await page.screenshot({ path: path.join(outDir, 'top.png'), fullPage: true });

  // Sorting by name reorders the rows.
  await page.click('th:has-text("name")');
  result.sortedByName = (await readTop()).map((r) => r.name);
  await page.click('th:has-text("flat%")');

  // Focus on a function: only samples through it remain.
  await page.fill('[data-testid=focus]', 'main\\.nested');
  await page.press('[data-testid=focus]', 'Enter');
  await page.waitForFunction(() => document.querySelector('.status')?.textContent.includes('shown'));
  result.focusNested = await readTop();
  await page.fill('[data-testid=focus]', '');
  await page.press('[data-testid=focus]', 'Enter');
  await page.waitForFunction(() => !document.querySelector('.status')?.textContent.includes('shown'));
  // RE2's leading (?i) works (the browser's RegExp gets the flag instead).
  await page.fill('[data-testid=focus]', '(?i)MAIN\\.NESTED');
  await page.press('[data-testid=focus]', 'Enter');
  await page.waitForFunction(() => document.querySelector('.status')?.textContent.includes('shown'));
  result.focusCaseless = await readTop();
  // An invalid expression: the filter is not applied and the page says why.
  await page.fill('[data-testid=focus]', 'main(');
  await page.press('[data-testid=focus]', 'Enter');
  await page.waitForSelector('[data-testid=filter-error]');
  result.badFocusError = await page.textContent('[data-testid=filter-error]');
  result.badFocusRows = (await readTop()).length;
  await page.fill('[data-testid=focus]', '');
  await page.press('[data-testid=focus]', 'Enter');
  await page.waitForFunction(() => !document.querySelector('[data-testid=filter-error]')
    && !document.querySelector('.status')?.textContent.includes('shown'));

  // Click a row: its source view; without the file, the file to drop is named.
  await page.click('[data-testid=top-row][data-name="main.leakLarge"]');
  await page.waitForSelector('[data-testid=source-view] table.src');
  result.sourceWithoutText = await page.textContent('[data-testid=source-view]');
  await page.setInputFiles('[data-testid=file-input]', sourceFile);
  await page.waitForFunction(() => document.querySelector('[data-testid=source-view] td.code'));
  result.sourceWithText = await page.textContent('[data-testid=source-view]');
  result.sourceHotLines = await page.$$eval('[data-testid=source-view] tr.hot', (rs) => rs.map((r) => ({
    line: Number(r.dataset.line), flat: Number(r.children[1].dataset.value), cum: Number(r.children[2].dataset.value),
    code: r.querySelector('td.code')?.textContent ?? '',
  })));
  await page.screenshot({ path: path.join(outDir, 'source.png'), fullPage: true });

  // View, sample type and filters survive a reload (the file has to be opened again).
  await view('top');
  await showSampleType('alloc_space');
  await page.fill('[data-testid=ignore]', 'churn');
  await page.press('[data-testid=ignore]', 'Enter');
  await page.waitForFunction(() => location.hash.includes('ignore=churn'));
  result.hashBeforeReload = await page.evaluate(() => location.hash);
  await page.reload();
  await page.waitForSelector('[data-testid=file-input]', { state: 'attached' });
  await page.setInputFiles('[data-testid=file-input]', profile);
  await page.waitForSelector('[data-testid=top-table]');
  result.afterReload = {
    hash: await page.evaluate(() => location.hash),
    sampleType: await page.$eval('[data-testid=sample-type]', (s) => s.value),
    ignore: await page.$eval('[data-testid=ignore]', (i) => i.value),
    names: (await readTop()).map((r) => r.name),
  };

  // Click-to-zoom on the flame graph narrows the breadcrumbs.
  await page.fill('[data-testid=ignore]', '');
  await page.press('[data-testid=ignore]', 'Enter');
  await view('flame');
  const crumbsBefore = await page.$$eval('.crumb', (c) => c.length);
  const b2 = await page.$eval('[data-testid=flame-graph]', (c) => { const r = c.getBoundingClientRect(); return [r.x, r.y, r.width]; });
  await page.mouse.click(b2[0] + 5, b2[1] + 20 * 2 + 10);
  await page.waitForFunction((n) => document.querySelectorAll('.crumb').length > n, crumbsBefore);
  result.zoomCrumbs = await page.$$eval('.crumb', (c) => c.map((x) => x.textContent));

  // The Content-Security-Policy forbids requests to other origins.
  result.cspBlocksOtherOrigins = await page.evaluate(async () => {
    let violated = false;
    document.addEventListener('securitypolicyviolation', () => { violated = true; });
    try { await fetch('http://127.0.0.2:9/leak'); } catch (e) { /* blocked or refused */ }
    await new Promise((r) => setTimeout(r, 100));
    return violated;
  });

  // Drag and drop anywhere on the page opens a file too.
  const b64 = fs.readFileSync(profile).toString('base64');
  const dt = await page.evaluateHandle((data) => {
    const t = new DataTransfer();
    const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    t.items.add(new File([bytes], 'dropped.pb.gz'));
    return t;
  }, b64);
  await page.dispatchEvent('main', 'drop', { dataTransfer: dt });
  await page.waitForFunction(() => document.querySelector('.status')?.textContent.includes('dropped.pb.gz'));
  result.dropped = await page.textContent('.status');

  // The same profile inflated (a raw protobuf, read as a stream) gives the same table
  // as the gzipped one (inflated in www/inflate-worker.js).
  await view('top');
  const gzTable = await readTop();
  const raw = zlib.gunzipSync(fs.readFileSync(profile)).toString('base64');
  const dtRaw = await page.evaluateHandle((data) => {
    const t = new DataTransfer();
    t.items.add(new File([Uint8Array.from(atob(data), (c) => c.charCodeAt(0))], 'dropped-raw.pb'));
    return t;
  }, raw);
  await page.dispatchEvent('main', 'drop', { dataTransfer: dtRaw });
  await page.waitForFunction(() => document.querySelector('.status')?.textContent.includes('dropped-raw.pb'));
  await page.waitForSelector('[data-testid=top-row]');
  result.rawTable = await readTop();
  // Since the reload: two gzipped loads and a raw one, none needing the slow
  // whole-file decoder (a broken or missing inflate worker would).
  result.wholeFileDecodes = await page.evaluate(() => performance.getEntriesByName('heapsnap:whole-file-decode').length);
  result.gzTable = gzTable;

  // ?profile=URL (same origin) opens straight into the flame graph.
  const pre = await browser.newPage({ viewport: { width: 1360, height: 860 } });
  pre.on('pageerror', (e) => result.errors.push(String(e)));
  await pre.goto(`${server.url}/index.html?profile=demo/preload.pb.gz`);
  await waitMark(pre, 'flame-painted', 1);
  result.preload = {
    status: await pre.textContent('.status'),
    view: await pre.$eval('[role=tab][aria-selected=true]', (t) => t.dataset.view),
  };
  await pre.close();

  // A browser without DecompressionStream (the wasm has no inflater): a gzipped
  // profile gets a clear error instead of a failure deep in the decoder.
  const old = await browser.newPage({ viewport: { width: 1360, height: 860 } });
  old.on('pageerror', (e) => result.errors.push(String(e)));
  await old.addInitScript(() => { delete globalThis.DecompressionStream; });
  // ...nor in workers: the inflate worker is kept from loading.
  await old.route('**/inflate-worker.js', (r) => r.abort());
  await old.goto(`${server.url}/index.html`);
  await old.waitForSelector('[data-testid=file-input]', { state: 'attached' });
  await old.setInputFiles('[data-testid=file-input]', profile);
  await old.waitForSelector('[data-testid=error]');
  result.noDecompressionStreamError = await old.textContent('[data-testid=error]');
  await old.close();

  // A wasm trap (what a Rust panic compiles to in the release build) reaches the page
  // as an error, not a silent freeze. A real trap: a tiny module running `unreachable`.
  const trap = await browser.newPage({ viewport: { width: 1360, height: 860 } });
  await trap.goto(`${server.url}/index.html`);
  await trap.waitForFunction(() => window.__heapsnapWasm);
  await trap.evaluate(() => {
    const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 2, 1, 0,
      7, 5, 1, 1, 102, 0, 0, 10, 5, 1, 3, 0, 0, 11]);
    const f = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports.f;
    setTimeout(() => f());
  });
  await trap.waitForSelector('[data-testid=error]');
  result.trapError = await trap.textContent('[data-testid=error]');
  await trap.close();
} finally {
  fs.writeFileSync(path.join(outDir, 'result.json'), JSON.stringify(result, null, 1));
  await browser.close();
  server.close();
}
