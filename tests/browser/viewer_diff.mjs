// The viewer's diff view in headless Chromium. Driven by tests/tests/viewer_diff.rs,
// which compares what this script reads off the page with
// `go tool pprof -diff_base`. Usage:
//   node viewer_diff.mjs WWW BASE NEW OUT_DIR FOCUS_REGEX
// Writes OUT_DIR/result.json and screenshots OUT_DIR/diff.png (flame graph of the
// diff), OUT_DIR/diff-top.png.
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch, waitMark } from './lib.mjs';

const [www, base, neu, outDir, FOCUS] = process.argv.slice(2);
fs.mkdirSync(outDir, { recursive: true });
const result = { errors: [], consoleErrors: [], sampleTypes: [], diff: { tables: {}, pixels: {} }, plain: { tables: {}, pixels: {} } };

// Both files are also served, for the `#profile=URL&base=URL` link.
const server = await serve(www, { '/demo/new.pb.gz': neu, '/demo/base.pb.gz': base });
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1360, height: 860 }, deviceScaleFactor: 2 });
  page.on('pageerror', (e) => result.errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') result.consoleErrors.push(m.text()); });
  await page.goto(`${server.url}/index.html`);
  await page.waitForSelector('[data-testid=file-input]', { state: 'attached' });

  const status = () => page.textContent('.status');
  const waitStatus = (pred, arg) => page.waitForFunction(pred, arg);
  const showSampleType = async (st) => {
    await page.selectOption('[data-testid=sample-type]', st);
    await page.waitForFunction((s) => document.querySelector('.status')?.textContent.includes(`${s}:`), st);
  };
  const view = async (v) => {
    await page.click(`[data-view=${v}]`);
    await page.waitForSelector(v === 'flame' ? '[data-testid=flame-graph]' : '[data-testid=top-table]');
  };
  const readTop = () => page.$$eval('[data-testid=top-row]', (rows) => rows.map((r) => {
    const v = [...r.querySelectorAll('td[data-value]')].map((td) => Number(td.dataset.value));
    return { name: r.dataset.name, flat: v[0], flatPct: v[1], sumPct: v[2], cum: v[3], cumPct: v[4] };
  }));
  // Canvas pixels by colour: the diff's growth red (hue 4) and shrinkage blue (hue
  // 214) at a visible saturation, its light grey for no change, and the plain flame
  // graph's warm hues (8…50).
  const flameColours = () => page.$eval('[data-testid=flame-graph]', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const out = { painted: 0, grew: 0, shrank: 0, unchanged: 0, warm: 0 };
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] === 0) continue;
      out.painted++;
      const [r, g, b] = [d[i] / 255, d[i + 1] / 255, d[i + 2] / 255];
      const max = Math.max(r, g, b), min = Math.min(r, g, b), l = (max + min) / 2;
      const s = max === min ? 0 : (max - min) / (1 - Math.abs(2 * l - 1));
      if (s < 0.04 && l >= 0.8 && l <= 0.93) out.unchanged++;
      if (max === min) continue;
      let h = max === r ? ((g - b) / (max - min)) % 6 : max === g ? (b - r) / (max - min) + 2 : (r - g) / (max - min) + 4;
      h = (h * 60 + 360) % 360;
      if (s < 0.3) continue;
      if (h < 7 || h > 355) out.grew++;
      else if (h >= 200 && h <= 228) out.shrank++;
      else if (h >= 7.5 && h <= 52 && s >= 0.5) out.warm++;
    }
    return out;
  });
  const everySampleType = async (into) => {
    for (const st of result.sampleTypes) {
      await view('flame');
      await showSampleType(st);
      into.pixels[st] = await flameColours();
      await view('top');
      into.tables[st] = await readTop();
    }
  };

  // 1. The new profile, through the main file input.
  await page.setInputFiles('[data-testid=file-input]', neu);
  await waitMark(page, 'flame-painted', 1);
  result.sampleTypes = await page.$$eval('[data-testid=sample-type] option', (os) => os.map((o) => o.value));
  result.plainStatus = await status();

  // 2. The base, through "Compare with base…".
  await page.setInputFiles('[data-testid=base-input]', base);
  await waitMark(page, 'flame-painted', 2);
  await waitStatus(() => document.querySelector('.status')?.textContent.includes('−'));
  result.diffStatus = await status();
  result.chip = await page.textContent('button.chip');
  result.legend = await page.$('.status .legend') !== null;
  await everySampleType(result.diff);

  // The diff flame graph of in-use space (growth and shrinkage), and its tooltip.
  await view('flame');
  await showSampleType('inuse_space');
  await page.mouse.move(0, 0);
  await page.screenshot({ path: path.join(outDir, 'diff.png'), fullPage: true });
  const box = await page.$eval('[data-testid=flame-graph]', (c) => { const r = c.getBoundingClientRect(); return [r.x, r.y, r.width]; });
  await page.mouse.move(box[0] + box[2] / 2, box[1] + 30);
  await page.waitForSelector('.tooltip');
  result.tooltip = await page.textContent('.tooltip');
  await page.mouse.move(0, 0);
  await view('top');
  await page.screenshot({ path: path.join(outDir, 'diff-top.png'), fullPage: true });

  // Focus applies to the diff as pprof's -focus does with -diff_base.
  await page.fill('[data-testid=focus]', FOCUS);
  await page.press('[data-testid=focus]', 'Enter');
  await waitStatus(() => document.querySelector('.status')?.textContent.includes('shown'));
  result.diffFocused = await readTop();
  await page.fill('[data-testid=focus]', '');
  await page.press('[data-testid=focus]', 'Enter');
  await waitStatus(() => !document.querySelector('.status')?.textContent.includes('shown'));

  // 3. Clearing the base: the plain profile again.
  await page.click('button.chip');
  await waitStatus(() => !document.querySelector('.status')?.textContent.includes('−'));
  result.clearedStatus = await status();
  result.chipAfterClear = await page.$('button.chip') !== null;
  result.legendAfterClear = await page.$('.status .legend') !== null;
  await everySampleType(result.plain);

  // 4. A base dropped on "Compare with base…".
  await showSampleType('inuse_space');
  const b64 = fs.readFileSync(base).toString('base64');
  const dt = await page.evaluateHandle((data) => {
    const t = new DataTransfer();
    const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    t.items.add(new File([bytes], 'dropped-base.pb.gz'));
    return t;
  }, b64);
  await page.dispatchEvent('.base-drop', 'drop', { dataTransfer: dt });
  await waitStatus(() => document.querySelector('.status')?.textContent.includes('− dropped-base.pb.gz'));
  result.droppedOnBase = { status: await status(), table: await readTop() };

  // 5. Both files picked at once (new first): the older one becomes the base.
  await page.click('button.chip');
  await waitStatus(() => !document.querySelector('.status')?.textContent.includes('−'));
  await page.setInputFiles('[data-testid=file-input]', [neu, base]);
  await waitStatus(() => document.querySelector('.status')?.textContent.includes('−'));
  result.pickedTogether = { status: await status(), table: await readTop() };

  // 6. A diff link, `#profile=URL&base=URL`: opens the diff, and still does after the
  // app rewrites the hash and the page is reloaded; clearing the base drops it from
  // the link.
  const link = await browser.newPage({ viewport: { width: 1360, height: 860 } });
  link.on('pageerror', (e) => result.errors.push(String(e)));
  const linkState = async () => ({
    status: await link.textContent('.status'),
    hash: await link.evaluate(() => location.hash),
  });
  await link.goto(`${server.url}/index.html#profile=demo/new.pb.gz&base=demo/base.pb.gz`);
  await waitMark(link, 'flame-painted', 1);
  result.link = { opened: await linkState() };
  await link.selectOption('[data-testid=sample-type]', 'alloc_space');
  await link.waitForFunction(() => location.hash.includes('si=alloc_space'));
  await link.reload();
  await waitMark(link, 'flame-painted', 1);
  result.link.reloaded = await linkState();
  if (await link.$('button.chip')) {
    await link.click('button.chip');
    await link.waitForFunction(() => !document.querySelector('.status')?.textContent.includes('−'));
    // The app writes the hash a moment after the last change (hash.rs): wait for it,
    // and let the test's assertion show the hash if it never drops the base.
    await link.waitForFunction(() => !location.hash.includes('base='), null, { timeout: 3000 }).catch(() => {});
    result.link.cleared = await linkState();
  }
  await link.close();
} finally {
  fs.writeFileSync(path.join(outDir, 'result.json'), JSON.stringify(result, null, 1));
  await browser.close();
  server.close();
}
