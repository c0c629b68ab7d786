// Files the viewer's own pprof decoder does not take, opened as a user does (the file
// input, several files at once): each case goes through the lazily loaded importer
// (www/import-worker.js). Driven by tests/tests/viewer_import.rs and
// tests/tests/firmware_e2e.rs. Usage:
//   node viewer_import.mjs WWW OUT_DIR NAME=FILE[,FILE...]...
// Writes OUT_DIR/result.json ({ errors, cases: { NAME: { error, status, retention (the
// retention profile's label, or null), comments, sampleType, sampleTypes, top (the default
// type's rows), tops (every type's), importer, answers } } }) and OUT_DIR/NAME.png. A case
// whose NAME starts with `series` is a capture the page charts: its case also has
// `points` (the chart's) and `phases` (the importer's, with its wasm `memory` in bytes).
// A case whose NAME ends in `_slowread` is read by an importer whose reads of a file's
// parts each wait 300 ms first (a slow disk: its worker script patched on the way to the
// page), so that the page's requests to the worker come while it is still reading.
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch } from './lib.mjs';

const [www, outDir, ...named] = process.argv.slice(2);
fs.mkdirSync(outDir, { recursive: true });
const result = { errors: [], cases: {} };
const cases = named.map((a) => { const i = a.indexOf('='); return [a.slice(0, i), a.slice(i + 1).split(',')]; });

const server = await serve(www);
const browser = await launch();
try {
  for (const [name, files] of cases) {
    const page = await browser.newPage({ viewport: { width: 1200, height: 520 }, deviceScaleFactor: 1 });
    // (Not Playwright's 30 s: two cores shared with the test run's other work.)
    page.setDefaultTimeout(120000);
    page.on('pageerror', (e) => result.errors.push(`${name}: ${e}`));
    if (name.endsWith('_slowread')) await slowReads(page);
    await page.goto(`${server.url}/index.html`);
    await page.waitForSelector('[data-testid=file-input]', { state: 'attached' });
    await page.setInputFiles('[data-testid=file-input]', files);
    // Loaded (the status line names the file) or refused (the error notice).
    await page.waitForSelector('.status .file, [data-testid=error]', { timeout: 60000 });
    const r = {};
    r.error = await page.$eval('[data-testid=error]', (e) => e.textContent).catch(() => null);
    // ($eval, not textContent: that would wait 30 s for a status line an error never shows.)
    r.status = await page.$eval('.status', (e) => e.textContent).catch(() => null);
    r.importer = await page.evaluate(() => performance.getEntriesByName('heapsnap:importer').length);
    if (!r.error && name.startsWith('series')) {
      const chart = await page.waitForSelector('[data-testid=series-chart]', { timeout: 60000 });
      r.points = Number(await chart.evaluate((c) => c.dataset.points));
      r.phases = await page.evaluate(() => window.__heapsnapSeriesPhases);
    }
    if (!r.error) {
      r.retention = await page.$eval('[data-testid=comments] li.retention', (e) => e.textContent).catch(() => null);
      r.comments = await page.$$eval('[data-testid=comments] li', (li) => li.map((l) => l.textContent));
      r.sampleType = await page.$eval('[data-testid=sample-type]', (s) => s.value);
      r.sampleTypes = await page.$$eval('[data-testid=sample-type] option', (o) => o.map((x) => x.value));
      await page.click('[data-view=top]');
      await page.waitForSelector('[data-testid=top-table]');
      const readTop = () => page.$$eval('[data-testid=top-row]', (rows) => rows.map((row) => {
        const v = [...row.querySelectorAll('td[data-value]')].map((td) => Number(td.dataset.value));
        return { name: row.dataset.name, flat: v[0], flatPct: v[1], sumPct: v[2], cum: v[3], cumPct: v[4] };
      }));
      r.top = await readTop();
      // Every sample type's table.
      r.tops = {};
      for (const st of r.sampleTypes) {
        await page.selectOption('[data-testid=sample-type]', st);
        await page.waitForFunction((x) => document.querySelector('.status')?.textContent.includes(`${x}:`), st);
        r.tops[st] = await readTop();
      }
      // The page answers after the importer's worker ended.
      r.answers = await page.evaluate(() => 1 + 1);
    }
    await page.screenshot({ path: path.join(outDir, `${name}.png`) });
    result.cases[name] = r;
    await page.close();
  }
} finally {
  fs.writeFileSync(path.join(outDir, 'result.json'), JSON.stringify(result, null, 1));
  await browser.close();
  server.close();
}

// Every read of a file's parts by the importer's worker waits 300 ms first.
async function slowReads(page) {
  await page.route('**/import-worker.js', async (route) => {
    const res = await route.fetch();
    const at = 'const need = async (...ranges) => {';
    const body = await res.text();
    if (!body.includes(at)) throw new Error(`import-worker.js has no \`${at}\` to slow down`);
    await route.fulfill({ response: res, body: body.replace(at, `${at} await new Promise((r) => setTimeout(r, 300));`) });
  });
}
