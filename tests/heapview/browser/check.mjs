// heapview in a real browser: Debian's chromium, headless, driven by
// puppeteer-core. Reads the histogram of the test dump (graph H of
// testdata/README.md) and checks its exact counts, follows class -> instance
// -> referrer -> path from the roots by clicking links, checks that the class
// named <script>alert(1)</script> is shown as text (no script, no dialog) and
// that a screenshot of the histogram is not blank.
//
//   node check.mjs URL SCREENSHOT.png
import { writeFileSync } from 'node:fs';
import { checker, withChromium } from './chromium.mjs';

const [url, shot] = process.argv.slice(2);
const { check, failed } = checker();

await withChromium(async (browser) => {
  const page = await browser.newPage();
  await page.setViewport({ width: 1000, height: 700 });
  const dialogs = [];
  page.on('dialog', async (d) => { dialogs.push(d.message()); await d.dismiss(); });

  // The histogram: rows of (class, instances, bytes, retained).
  await page.goto(`${url}histogram`, { waitUntil: 'load' });
  const rows = await page.$$eval('#histogram tr', (trs) => trs.slice(1).map(
    (tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
  const row = (name) => rows.find((r) => r[0] === name) || [];
  check('histogram: 7 Node, 168 bytes, 224 retained', JSON.stringify(row('Node')) === '["Node","7","168","224"]',
        JSON.stringify(row('Node')));
  // F is untyped in the dump; the typing pass names it by its holder, D's child field.
  check('histogram: 1 (held by Node::child), 64 bytes',
        JSON.stringify(row('(held by Node::child)')) === '["(held by Node::child)","1","64","64"]',
        JSON.stringify(row('(held by Node::child)')));
  const script = '<script>alert(1)</script>';
  check('histogram: the class <script>alert(1)</script> is shown as text, 1 instance, 16 bytes',
        JSON.stringify(row(script)) === JSON.stringify([script, '1', '16', '16']), JSON.stringify(row(script)));
  check('no script element in the page', (await page.$$eval('script', (s) => s.length)) === 0);
  check('histogram: 9 objects, 248 bytes',
        (await page.$eval('body', (b) => b.textContent)).includes('9 objects, 248 bytes'));

  // Screenshot of the histogram, then its pixels counted in a blank page.
  const png = await page.screenshot({ type: 'png' });
  writeFileSync(shot, png);
  const probe = await browser.newPage();
  await probe.setContent(`<img id="i" src="data:image/png;base64,${Buffer.from(png).toString('base64')}">`);
  await probe.waitForFunction(() => document.getElementById('i').complete);
  const [inked, total] = await probe.evaluate(() => {
    const img = document.getElementById('i');
    const c = document.createElement('canvas');
    c.width = img.naturalWidth;
    c.height = img.naturalHeight;
    const ctx = c.getContext('2d');
    ctx.drawImage(img, 0, 0);
    const d = ctx.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let k = 0; k < d.length; k += 4) if (d[k] < 200 || d[k + 1] < 200 || d[k + 2] < 200) n++;
    return [n, d.length / 4];
  });
  check('screenshot of the histogram is not blank (dark pixels > 0.5%)', inked > total * 0.005, `${inked} of ${total}`);
  await probe.close();

  // Class -> instance -> referrer -> path from the roots, by clicking.
  const follow = async (selector, what) => {
    const link = await page.$(selector);
    check(`link: ${what}`, link !== null, selector);
    if (!link) throw new Error(`no link ${selector}`);
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), link.click()]);
  };
  await follow('#histogram a[href="/class?name=Node"]', 'class Node');
  check('class page', (await page.title()).startsWith('Class Node'), await page.title());
  await follow('a[href="/object/0x1300"]', 'instance Node@0x1300');
  const referrers = await page.$$eval('#refs-to a', (as) => as.map((a) => a.textContent));
  check('Node@0x1300 is referred to by Node@0x1100 and Node@0x1200',
        JSON.stringify(referrers) === '["Node@0x1100","Node@0x1200"]', JSON.stringify(referrers));
  await follow('#refs-to a[href="/object/0x1200"]', 'referrer Node@0x1200');
  const body = await page.$eval('body', (b) => b.textContent);
  check('Node@0x1200 is a root (other: registry)', body.includes('other registry'));
  await follow('a[href="/path/0x1200"]', 'path from the roots');
  await page.goto(`${url}path/0x1500`, { waitUntil: 'load' });
  const chain = await page.$$eval('#path > li > a', (as) => as.map((a) => a.textContent));
  check('path to (held by Node::child)@0x1500: Node@0x1200 -> Node@0x1300 -> (held by Node::child)@0x1500',
        JSON.stringify(chain) === '["Node@0x1200","Node@0x1300","(held by Node::child)@0x1500"]', JSON.stringify(chain));
  check('the root chain starts at the registry root',
        (await page.$eval('#path > li', (li) => li.textContent)).includes('root: other registry'));
  await page.goto(`${url}object/0x9999`, { waitUntil: 'load' });
  check('a missing object is a 404 page', (await page.title()).startsWith('Not found'));
  check('no dialog opened (no script ran)', dialogs.length === 0, dialogs.join(','));
});
process.exit(failed());
