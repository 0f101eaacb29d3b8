// heapview --series in Debian's headless chromium: the series page of the
// leaking growth_program lists the growing class first, names its holder as
// the top accumulation point, and its path link reaches a root; the plot
// draws the class as the first line and the point as a dashed one.
//
//   node series.mjs URL SCREENSHOT.png
import { writeFileSync } from 'node:fs';
import { checker, withChromium } from './chromium.mjs';

const [url, shot] = process.argv.slice(2);
const { check, failed } = checker();

await withChromium(async (browser) => {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 800 });
  await page.goto(url, { waitUntil: 'load' });
  await Promise.all([page.waitForNavigation(), page.click('nav a[href="/series"]')]);
  const rows = await page.$$eval('#series tr', (trs) => trs.slice(1).map(
    (tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
  check('series: the first class is the growing app::Session', rows.length > 0 && rows[0][0] === 'grows' &&
        rows[0][1] === 'app::Session', JSON.stringify(rows[0]));
  check('series: Session counts 100 → 200 → 300', rows.length > 0 && rows[0][4] === '100 → 200 → 300',
        JSON.stringify(rows[0]));
  const points = await page.$$eval('#points tr', (trs) => trs.slice(1).map(
    (tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
  check('series: the top accumulation point is app::SessionCache', points.length > 0 &&
        points[0][0].startsWith('app::SessionCache@0x'), JSON.stringify(points[0]));
  check('series: grown by 200 app::Session', points.length > 0 && points[0][3].includes('app::Session: 44,800 bytes (200)'),
        JSON.stringify(points[0]));
  // The plot: one line per growing class, the top point dashed and marked.
  const lines = await page.$$eval('#growth polyline', (ps) => ps.map((p) => [p.getAttribute('stroke-dasharray'),
    p.querySelector('title').textContent]));
  check('plot: app::Session is the first line, 22,400 → 44,800 → 67,200 bytes',
        lines.length > 0 && lines[0][0] === null && lines[0][1] === 'app::Session, bytes per dump: 22,400 44,800 67,200',
        JSON.stringify(lines));
  check('plot: the top accumulation point is a dashed line of app::SessionCache', lines.some(([d, t]) => d !== null &&
        t.startsWith('point app::SessionCache@0x')), JSON.stringify(lines));
  check('plot: no script element', (await page.$$eval('script', (x) => x.length)) === 0);
  writeFileSync(shot, await page.screenshot({ type: 'png', fullPage: true }));
  await Promise.all([page.waitForNavigation(), page.click('#points tr:nth-child(2) a[href^="/path/"]')]);
  const body = await page.$eval('body', (b) => b.textContent);
  check('path page: the point is held by a root', body.includes('app::SessionCache') && /root/i.test(body),
        body.slice(0, 300));
});
process.exit(failed());
