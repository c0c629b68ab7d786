// The demo page as `cargo xtask demo` serves it: www/ with the firmware's profile at
// /demo/firmware.pb.gz, opened through the viewer's `?profile=` preload (no file
// picked by hand). Driven by tests/tests/firmware_e2e.rs. Usage:
//   node firmware_view.mjs WWW PROFILE OUT_DIR [SCREENSHOT]
// Writes OUT_DIR/result.json (the top table's rows, the status line, page errors, how
// much of the flame canvas is painted) and OUT_DIR/flame.png (or SCREENSHOT).
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch, waitMark } from './lib.mjs';

const [www, profile, outDir, screenshot] = process.argv.slice(2);
fs.mkdirSync(outDir, { recursive: true });
const result = { errors: [], consoleErrors: [] };

const server = await serve(www, { '/demo/firmware.pb.gz': profile });
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 440 }, deviceScaleFactor: 1 });
  page.on('pageerror', (e) => result.errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') result.consoleErrors.push(m.text()); });
  result.url = `${server.url}/?profile=demo/firmware.pb.gz`;
  await page.goto(result.url);
  // Straight into the flame graph: no file input touched.
  await waitMark(page, 'flame-painted', 1);
  result.flamePainted = await page.$eval('[data-testid=flame-graph]', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) n++;
    return n;
  });
  result.sampleType = await page.$eval('[data-testid=sample-type]', (s) => s.value);
  result.status = await page.textContent('.status');
  // The profile's comments as the page lists them (the exact heap totals among them).
  result.comments = await page.$$eval('[data-testid=comments] li', (li) => li.map((l) => l.textContent));
  await page.screenshot({ path: screenshot || path.join(outDir, 'flame.png') });

  // Hover the leak's frame (the deepest row, left third; rows are 20 px high) and read
  // the tooltip; also record whether the canvas is still painted while hovering.
  const box = await page.$eval('[data-testid=flame-graph]', (c) => { const r = c.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; });
  for (let y = box[1] + box[3] - 8; y > box[1] && !result.tooltip?.includes('remember_message'); y -= 20) {
    await page.mouse.move(box[0] + box[2] * 0.3, y);
    result.tooltip = await page.waitForSelector('.tooltip', { timeout: 2000 }).then((t) => t.textContent()).catch(() => '');
  }
  result.flamePaintedWhileHovering = await page.$eval('[data-testid=flame-graph]', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) n++;
    return n;
  });
  await page.mouse.move(0, 0);

  await page.click('[data-view=top]');
  await page.waitForSelector('[data-testid=top-table]');
  result.top = await page.$$eval('[data-testid=top-row]', (rows) => rows.map((r) => {
    const v = [...r.querySelectorAll('td[data-value]')].map((td) => Number(td.dataset.value));
    return { name: r.dataset.name, flat: v[0], flatPct: v[1], sumPct: v[2], cum: v[3], cumPct: v[4] };
  }));
} finally {
  fs.writeFileSync(path.join(outDir, 'result.json'), JSON.stringify(result, null, 1));
  await browser.close();
  server.close();
}
