// The heap-over-time chart (www/series.js) on a serial capture opened with its ELF, as
// a user does it: both files through "Open profile…" (or a `#capture=…&elf=…` link),
// then clicks on the chart's points. Driven by tests/tests/firmware_timeline.rs.
// Usage:
//   node viewer_series.mjs WWW OUT_DIR CAPTURE ELF FIRST SECOND
// Reads the chart, then shows point FIRST, point SECOND, the diff FIRST → SECOND
// (shift-click), the peak; the top table of each. Writes OUT_DIR/result.json and
// OUT_DIR/series.png (the chart over the flame graph of the last point).
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch } from './lib.mjs';

const [www, outDir, capture, elf, first, second] = process.argv.slice(2);
fs.mkdirSync(outDir, { recursive: true });
const result = { errors: [] };

const server = await serve(www, { '/capture.cobs': capture, '/firmware.elf': elf });
const browser = await launch();

const readTop = (page) => page.$$eval('[data-testid=top-row]', (rows) => rows.map((row) => {
  const v = [...row.querySelectorAll('td[data-value]')].map((td) => Number(td.dataset.value));
  return { name: row.dataset.name, flat: v[0], flatPct: v[1], sumPct: v[2], cum: v[3], cumPct: v[4] };
}));

// Moves the pointer over point `i` of the chart: where it is, how many points the chart
// has, and the tooltip shown.
async function hover(page, i) {
  const hit = await page.$('[data-testid=series-hit]');
  const box = await hit.boundingBox();
  const chart = await page.$('[data-testid=series-chart]');
  const cbox = await chart.boundingBox();
  const [left, step] = await hit.evaluate((h) => [Number(h.dataset.left), Number(h.dataset.step)]);
  const n = Number(await chart.evaluate((c) => c.dataset.points));
  const at = { x: cbox.x + left + step * i, y: box.y + box.height / 2 };
  await page.mouse.move(at.x, at.y);
  const tip = await page.textContent('[data-testid=series-tip]');
  return { at, n, tip };
}

// Clicks point `i` of the chart where a user would, and waits for the views to show it
// (the status line names the point's file).
async function clickPoint(page, i, shift = false) {
  const generation = await page.evaluate(() => performance.getEntriesByName('heapsnap:decoded').length);
  const { at, n, tip } = await hover(page, i);
  if (shift) await page.keyboard.down('Shift');
  await page.mouse.click(at.x, at.y);
  if (shift) await page.keyboard.up('Shift');
  // Decoded once per file: one for a point, two for a diff.
  await page.waitForFunction(([g, k]) => performance.getEntriesByName('heapsnap:decoded').length >= g + k,
    [generation, shift ? 2 : 1], { timeout: 60000 });
  await page.waitForSelector('.status .file');
  return { tip, n };
}

async function table(page) {
  await page.click('[data-view=top]');
  await page.waitForSelector('[data-testid=top-table]');
  const rows = await readTop(page);
  const status = await page.textContent('.status');
  const shown = await page.textContent('[data-testid=series-shown]');
  await page.click('[data-view=flame]');
  return { rows, status, shown };
}

try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 760 }, deviceScaleFactor: 1 });
  page.on('pageerror', (e) => result.errors.push(String(e)));
  await page.goto(`${server.url}/index.html`);
  await page.waitForSelector('[data-testid=file-input]', { state: 'attached' });
  await page.setInputFiles('[data-testid=file-input]', [capture, elf]);
  await page.waitForSelector('[data-testid=series-chart]', { timeout: 60000 });
  await page.waitForSelector('[data-testid=series-legend][data-complete="1"]', { timeout: 60000 });
  await page.waitForSelector('.status .file');
  const chart = await page.$('[data-testid=series-chart]');
  result.points = Number(await chart.evaluate((c) => c.dataset.points));
  result.bad = await page.$$eval('[data-testid=series-bad]', (b) => b.map((x) => x.querySelector('title').textContent));
  result.legend = await page.$$eval('[data-testid=series-legend] .key', (k) => k.map((x) => x.dataset.function));
  result.legendError = await page.$eval('[data-testid=series-legend]', (l) => l.querySelector('.series-error')?.textContent ?? null);
  result.selected = await page.$$eval('[data-testid=series-selected]', (s) => s.map((x) => Number(x.dataset.index)));
  result.head = await page.textContent('.series-head');
  await page.screenshot({ path: path.join(outDir, 'series.png') });
  result.last = await table(page);

  result.first = { ...(await clickPoint(page, Number(first))), ...(await table(page)) };
  result.second = { ...(await clickPoint(page, Number(second))), ...(await table(page)) };
  // Back to FIRST, then shift-click SECOND: their diff.
  await clickPoint(page, Number(first));
  result.diff = { ...(await clickPoint(page, Number(second), true)), ...(await table(page)) };
  result.diffBase = await page.$eval('.chip', (c) => c.textContent).catch(() => null);
  // The peak: one point again (the base is cleared).
  const generation = await page.evaluate(() => performance.getEntriesByName('heapsnap:decoded').length);
  await page.click('[data-testid=series-peak]');
  await page.waitForFunction((g) => performance.getEntriesByName('heapsnap:decoded').length > g, generation);
  result.peak = await page.$$eval('[data-testid=series-selected]', (s) => s.map((x) => Number(x.dataset.index)));
  result.peakBase = await page.$('.chip[title="Stop comparing"]').then((c) => c !== null);
  // Objects: the same functions' object counts at the last point (its tooltip lines).
  await page.selectOption('[data-testid=series-metric]', 'objects');
  await hover(page, Number(second));
  result.objectsTip = await page.$$eval('[data-testid=series-tip] div', (d) => d.map((x) => x.textContent).join('\n'));
  result.objectsLegend = await page.$$eval('[data-testid=series-legend] .key', (k) => k.map((x) => x.dataset.function));
  // Opening another file ends the series: the chart goes away.
  await page.setInputFiles('[data-testid=file-input]', [elf]);
  await page.waitForSelector('#series', { state: 'hidden' });
  result.closed = true;
  await page.close();

  // The demo's link: the capture and the ELF preloaded from this origin.
  const linked = await browser.newPage({ viewport: { width: 1200, height: 760 }, deviceScaleFactor: 1 });
  linked.on('pageerror', (e) => result.errors.push(`link: ${e}`));
  await linked.goto(`${server.url}/index.html#capture=capture.cobs&elf=firmware.elf`);
  await linked.waitForSelector('[data-testid=series-chart]', { timeout: 60000 });
  result.linkPoints = Number(await linked.$eval('[data-testid=series-chart]', (c) => c.dataset.points));
  await linked.close();
} catch (e) {
  result.errors.push(`script: ${e.stack || e}`);
} finally {
  fs.writeFileSync(path.join(outDir, 'result.json'), JSON.stringify(result, null, 1));
  await browser.close();
  server.close();
}
