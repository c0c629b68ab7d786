// Each silent-mistake profile opened in the viewer (preloaded through `?profile=`, as
// the demo page is): which warnings the page shows. Driven by
// tests/tests/firmware_e2e.rs. Usage:
//   node viewer_warnings.mjs WWW OUT_DIR NAME=PROFILE...
// Writes OUT_DIR/result.json ({ errors, profiles: { NAME: { comments, error } } }) and a
// screenshot of each page, OUT_DIR/NAME.png.
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch } from './lib.mjs';

const [www, outDir, ...named] = process.argv.slice(2);
fs.mkdirSync(outDir, { recursive: true });
const result = { errors: [], profiles: {} };
const profiles = named.map((a) => { const i = a.indexOf('='); return [a.slice(0, i), a.slice(i + 1)]; });

const server = await serve(www, Object.fromEntries(profiles.map(([n, f]) => [`/p/${n}.pb.gz`, f])));
const browser = await launch();
try {
  for (const [name] of profiles) {
    const page = await browser.newPage({ viewport: { width: 1200, height: 520 }, deviceScaleFactor: 1 });
    page.on('pageerror', (e) => result.errors.push(`${name}: ${e}`));
    await page.goto(`${server.url}/?profile=p/${name}.pb.gz`);
    // Loaded (the status line names the file) or refused (the error notice).
    await page.waitForSelector('.status .file, [data-testid=error]', { timeout: 60000 });
    const r = {};
    r.comments = await page.$$eval('[data-testid=comments] li', (li) => li.map((l) => l.textContent));
    r.error = await page.$eval('[data-testid=error]', (e) => e.textContent).catch(() => null);
    r.status = await page.textContent('.status').catch(() => null);
    await page.screenshot({ path: path.join(outDir, `${name}.png`) });
    result.profiles[name] = r;
    await page.close();
  }
} finally {
  fs.writeFileSync(path.join(outDir, 'result.json'), JSON.stringify(result, null, 1));
  await browser.close();
  server.close();
}
