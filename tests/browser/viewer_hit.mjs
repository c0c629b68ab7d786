// The flame graph's hover names only frames it draws (tests/tests/viewer_hit.rs): a
// frame narrower than the draw's 0.4-pixel cut is not painted, so hovering where it
// would be shows no tooltip for it. Usage: node viewer_hit.mjs WWW PROFILE OUT_DIR
// Writes OUT_DIR/result.json.
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch, waitMark } from './lib.mjs';

const [www, profile, outDir] = process.argv.slice(2);
fs.mkdirSync(outDir, { recursive: true });
const result = { errors: [] };
const server = await serve(www);
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1360, height: 860 } });
  page.on('pageerror', (e) => result.errors.push(String(e)));
  await page.goto(`${server.url}/index.html`);
  await page.waitForSelector('[data-testid=file-input]', { state: 'attached' });
  await page.setInputFiles('[data-testid=file-input]', profile);
  await waitMark(page, 'flame-painted', 1);
  const box = await page.$eval('[data-testid=flame-graph]', (c) => { const r = c.getBoundingClientRect(); return [r.x, r.y, r.width]; });
  // Rows of 20 px: the root, `main`, then its callees.
  const tooltipAt = async (x, row) => {
    await page.mouse.move(0, 0);
    await page.mouse.move(box[0] + x, box[1] + row * 20 + 10);
    await page.waitForTimeout(300);
    return (await page.$('.tooltip')) ? await page.textContent('.tooltip') : '';
  };
  // The left end of the callees' row, where the 1-in-a-million frame lies (ordered by
  // name): a pointer within 0.5 px of the edge is at offset 0, the frame's span.
  result.leftmost = await tooltipAt(0.2, 2);
  // The middle of that row: the frame that fills it.
  result.middle = await tooltipAt(box[2] / 2, 2);
  await page.screenshot({ path: path.join(outDir, 'hit.png') });
} catch (e) {
  result.errors.push(String(e?.stack ?? e));
} finally {
  fs.writeFileSync(path.join(outDir, 'result.json'), JSON.stringify(result, null, 2));
  await browser.close();
  server.close();
}
