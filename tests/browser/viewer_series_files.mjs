// Several snapshot files opened together (with their ELF) read as one series, as a user
// picks them: the chart's points, each point's tooltip, and the views of the point it
// opens on. Driven by tests/tests/firmware_timeline.rs.
// Usage:
//   node viewer_series_files.mjs WWW OUT_DIR ELF FILE...
// Writes OUT_DIR/result.json: the points, the chart's head, every point's tooltip, the
// selected point, the status line and top table of the point shown; with SERIES_BAD
// (comma-separated files, one not a snapshot), the error and status of that series.
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch } from './lib.mjs';

const [www, outDir, elf, ...files] = process.argv.slice(2);
fs.mkdirSync(outDir, { recursive: true });
const result = { errors: [] };

const server = await serve(www);
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 760 }, deviceScaleFactor: 1 });
  page.on('pageerror', (e) => result.errors.push(String(e)));
  await page.goto(`${server.url}/index.html`);
  await page.waitForSelector('[data-testid=file-input]', { state: 'attached' });
  await page.setInputFiles('[data-testid=file-input]', [...files, elf]);
  await page.waitForSelector('[data-testid=series-chart]', { timeout: 60000 });
  await page.waitForSelector('[data-testid=series-legend][data-complete="1"]', { timeout: 60000 });
  await page.waitForSelector('.status .file');
  const chart = await page.$('[data-testid=series-chart]');
  result.points = Number(await chart.evaluate((c) => c.dataset.points));
  result.head = await page.textContent('.series-head');
  result.legend = await page.$$eval('[data-testid=series-legend] .key', (k) => k.map((x) => x.dataset.function));
  result.legendError = await page.$eval('[data-testid=series-legend]', (l) => l.querySelector('.series-error')?.textContent ?? null);
  result.selected = await page.$$eval('[data-testid=series-selected]', (s) => s.map((x) => Number(x.dataset.index)));
  // Every point's tooltip, where a user's pointer would be.
  const hit = await page.$('[data-testid=series-hit]');
  const box = await hit.boundingBox();
  const cbox = await chart.boundingBox();
  const [left, step] = await hit.evaluate((h) => [Number(h.dataset.left), Number(h.dataset.step)]);
  result.tips = [];
  for (let i = 0; i < result.points; i++) {
    await page.mouse.move(cbox.x + left + step * i, box.y + box.height / 2);
    result.tips.push(await page.textContent('[data-testid=series-tip]'));
  }
  result.status = await page.textContent('.status');
  await page.click('[data-view=top]');
  await page.waitForSelector('[data-testid=top-table]');
  result.rows = await page.$$eval('[data-testid=top-row]', (rows) => rows.map((row) => {
    const v = [...row.querySelectorAll('td[data-value]')].map((td) => Number(td.dataset.value));
    return { name: row.dataset.name, flat: v[0], flatPct: v[1], sumPct: v[2], cum: v[3], cumPct: v[4] };
  }));
  await page.close();
  // A series that fails (SERIES_BAD: files of which one is not a snapshot): the error
  // where the chart would be, and no "Loading…" left in the status line.
  if (process.env.SERIES_BAD) {
    const bad = await browser.newPage({ viewport: { width: 1200, height: 760 }, deviceScaleFactor: 1 });
    bad.on('pageerror', (e) => result.errors.push(String(e)));
    await bad.goto(`${server.url}/index.html`);
    await bad.waitForSelector('[data-testid=file-input]', { state: 'attached' });
    await bad.setInputFiles('[data-testid=file-input]', [...process.env.SERIES_BAD.split(','), elf]);
    await bad.waitForSelector('[data-testid=series-error]', { timeout: 60000 });
    result.badError = await bad.textContent('[data-testid=series-error]');
    result.badLoading = await bad.$eval('.loading', (e) => e.textContent).catch(() => null);
    await bad.close();
  }
} catch (e) {
  result.errors.push(`script: ${e.stack || e}`);
} finally {
  fs.writeFileSync(path.join(outDir, 'result.json'), JSON.stringify(result, null, 1));
  await browser.close();
  server.close();
}
