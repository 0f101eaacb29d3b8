// The page heapview shows while a dump opens, in Debian's headless chromium:
// heapview holds its open (--hold-open FILE) mid-phase; the page says
// "Opening", the phase and the objects done of the total; then this check
// creates FILE, and the page, reloading itself with no script, becomes the
// dump's summary without anyone clicking.
//
//   node waiting.mjs URL SCREENSHOT.png HOLD_FILE
import { writeFileSync } from 'node:fs';
import { checker, withChromium } from './chromium.mjs';

const [url, shot, hold] = process.argv.slice(2);
const { check, failed } = checker();

// The page's h1 (null while a reload is under way).
async function title(page) {
  try {
    return await page.$eval('h1', (h) => h.textContent);
  } catch {
    return null;
  }
}

await withChromium(async (browser) => {
  const page = await browser.newPage();
  await page.setViewport({ width: 1000, height: 600 });
  await page.goto(url, { waitUntil: 'load' });
  const h1 = await title(page);
  check('waiting page: the title says the dump is opening', h1 !== null && h1.startsWith('Opening '), h1);
  const phase = await page.$eval('#phase', (td) => td.textContent).catch(() => '');
  check('waiting page: names the phase', phase.length > 0 && phase !== 'starting', phase);
  const done = await page.$eval('#done', (td) => td.textContent).catch(() => '');
  check('waiting page: objects done of the total', /^[0-9,]+ of [0-9,]+ objects \([0-9.]+%\)$/.test(done), done);
  check('waiting page: no script element', (await page.$$eval('script', (s) => s.length)) === 0);
  writeFileSync(shot, await page.screenshot({ type: 'png' }));

  writeFileSync(hold, '');
  // The page reloads itself every second: poll its title for up to 120 s
  // (a loaded machine finishes the open in a few).
  let now = null;
  for (let k = 0; k < 600; ++k) {
    now = await title(page);
    if (now !== null && now.startsWith('Heap ')) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  check('the page turns into the summary on its own', now !== null && now.startsWith('Heap '), now);
  const body = await page.$eval('body', (b) => b.textContent).catch(() => '');
  check('summary: the dump\'s objects are counted', /objects\s*[0-9,]+/.test(body), body.slice(0, 200));
});
process.exit(failed());
