// heapview's pictures in Debian's headless chromium: the summary page shows
// the largest retainer's class in view on first load, the flame graph's
// frame widths are readdump --dominators' retained bytes within a pixel's
// share, speedscope imports readdump --dominators --flame's folded stacks
// with the frames and totals the picture has, every SVG parses as XML with
// no script, and each page is screenshotted.
//
//   DOMINATORS=dominators.json [FOLDED=heap.folded SPEEDSCOPE=index.html] node pictures.mjs URL SHOT_PREFIX
// DOMINATORS is readdump --dominators --json's output for the served dump;
// without FOLDED the speedscope check is left out (the large dump).
import { readFileSync, writeFileSync } from 'node:fs';
import { checker, withChromium } from './chromium.mjs';

const [url, png] = process.argv.slice(2);
const shot = png.replace(/\.png$/, '-');
const { check, failed } = checker();
const dominators = JSON.parse(readFileSync(process.env.DOMINATORS, 'utf8'));
const kWidth = 1200;

// Every SVG of the page through the XML parser, and no script anywhere.
async function markup(page, what) {
  const problems = await page.$$eval('svg', (svgs) => svgs.map((s) => {
    const doc = new DOMParser().parseFromString(s.outerHTML, 'image/svg+xml');
    return doc.getElementsByTagName('parsererror').length ? s.id : null;
  }).filter((x) => x));
  check(`${what}: every SVG is well-formed XML`, problems.length === 0, problems.join(','));
  check(`${what}: no script element`, (await page.$$eval('script', (s) => s.length)) === 0);
}

// "Name: 1,234 bytes (..." -> [name, 1234]
const parseTitle = (t) => {
  const m = /^(.*): ([\d,]+) bytes/.exec(t);
  return m ? [m[1], Number(m[2].replace(/,/g, ''))] : [t, NaN];
};

await withChromium(async (browser) => {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  const dialogs = [];
  page.on('dialog', async (d) => { dialogs.push(d.message()); await d.dismiss(); });

  // The summary: the largest retainer's class, in view without scrolling.
  let t0 = Date.now();
  await page.goto(url, { waitUntil: 'load' });
  console.log(`summary page: ${Date.now() - t0} ms`);
  const top = dominators[0];
  const seen = await page.$$eval('#retainers text', (ts, cls) => ts.filter((t) => t.textContent.startsWith(`${cls}@`))
    .map((t) => { const r = t.getBoundingClientRect(); return [t.textContent, r.top, r.bottom, r.width]; }), top.class);
  check(`summary: the largest retainer ${top.class}@${top.id.replace(/^0x0*/, '0x')} is drawn first`,
        seen.length > 0 && seen[0][0].startsWith(`${top.class}@`), JSON.stringify(seen[0]));
  check('summary: its class is visible in the first screen', seen.length > 0 && seen[0][1] >= 0 &&
        seen[0][2] <= 800 && seen[0][3] > 0, JSON.stringify(seen[0]));
  const bar = await page.$eval('#retainers a rect', (r) => r.parentElement.getAttribute('href'));
  check('summary: the largest bar links to its object page', bar === `/object/${top.id}`, bar);
  if (dominators.length > 15) {
    const rest = await page.$$eval('#retainers text', (ts) => ts.map((t) => t.textContent).filter((t) => / smaller retainers, /.test(t)));
    check(`summary: the retainers past the 15th are one bar`, rest.length === 1 && rest[0].startsWith(
      `${(Number(process.env.TOP_RETAINERS) - 15).toLocaleString('en-US')} smaller retainers, `), JSON.stringify(rest));
  }
  check('summary: the typed bar is drawn', (await page.$$('#typed rect')).length > 0);
  await markup(page, 'summary');
  writeFileSync(`${shot}summary.png`, await page.screenshot({ type: 'png' }));

  // The flame graph: frames at depth 2 (under the root kinds) are the top
  // retainers grouped by class; their widths are the retained bytes' share.
  t0 = Date.now();
  await page.goto(`${url}flame`, { waitUntil: 'load' });
  console.log(`flame page: ${Date.now() - t0} ms, ${(await page.content()).length} bytes`);
  const frames = await page.$$eval('#flame rect', (rs) => rs.map((r) => [Number(r.getAttribute('y')),
    Number(r.getAttribute('width')), r.querySelector('title').textContent]));
  const total = parseTitle(frames[0][2])[1];
  const expected = new Map();
  for (const d of dominators) expected.set(d.class, (expected.get(d.class) || 0) + d.retained);
  const drawn = new Map();
  for (const [y, w, title] of frames) {
    if (y !== 36) continue;
    const [name] = parseTitle(title);
    drawn.set(name, (drawn.get(name) || 0) + w + 0.5);  // each rect is drawn half a pixel narrower
  }
  let worst = 0;
  let compared = 0;
  for (const [cls, bytes] of expected) {
    const want = kWidth * bytes / total;
    if (want < 1) continue;  // under a pixel's share: drawn among "(N smaller)"
    worst = Math.max(worst, Math.abs((drawn.get(cls) || 0) - want));
    compared++;
  }
  check(`flame: ${compared} class frames under the roots are readdump --dominators' bytes within a pixel`,
        compared > 0 && worst <= 1, `worst ${worst.toFixed(2)} px`);
  check('flame: frames are at most a few thousand rectangles', frames.length <= 5000, `${frames.length}`);
  await markup(page, 'flame');
  writeFileSync(`${shot}flame.png`, await page.screenshot({ type: 'png', fullPage: true }));
  const roots = frames.filter(([y]) => y === 18).map(([, w, t]) => [...parseTitle(t), w]);

  if (process.env.FOLDED) {
    const hostile = '<script>alert(1)</script>';
    check('flame: the class <script>alert(1)</script> is a frame, as text',
          frames.some(([, , t]) => t.startsWith(`${hostile}:`)));
    // speedscope's sandwich view of the folded file: each frame's total.
    const ss = await browser.newPage();
    await ss.goto(`file://${process.env.SPEEDSCOPE}#view=sandwich&localProfilePath=/nonexistent.js`, { waitUntil: 'load' });
    await ss.waitForFunction(() => typeof speedscope !== 'undefined');
    await ss.evaluate((b) => speedscope.loadFileFromBase64('heap.folded', b),
                      readFileSync(process.env.FOLDED).toString('base64'));
    await ss.waitForFunction(() => document.querySelectorAll('tr td').length > 0, { timeout: 20000 });
    const rows = await ss.$$eval('tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent))
      .filter((r) => r.length === 3));
    const totalOf = (name) => { const r = rows.find((x) => x[2] === name); return r ? Number(r[0].split(' ')[0]) : NaN; };
    const widest = roots.sort((a, b) => b[2] - a[2])[0];
    check(`speedscope: the widest top frame, ${widest[0]}, has the flame graph's ${widest[1]} bytes`,
          totalOf(widest[0]) === widest[1], `${totalOf(widest[0])}`);
    check('speedscope: every top frame has the flame graph\'s bytes', roots.every(([n, b]) => totalOf(n) === b),
          JSON.stringify(rows));
    const heaviest = rows[0];
    const inSvg = frames.filter(([, , t]) => parseTitle(t)[0] === heaviest[2]).reduce((s, [, , t]) => s + parseTitle(t)[1], 0);
    check(`speedscope: its first row, ${heaviest[2]}, totals what the picture's ${heaviest[2]} frames retain`,
          Number(heaviest[0].split(' ')[0]) === inSvg, `${heaviest[0]} against ${inSvg}`);
    check('speedscope: the hostile class is a frame', rows.some((r) => r[2] === hostile));
    writeFileSync(`${shot}speedscope.png`, await ss.screenshot({ type: 'png' }));
    await ss.close();
  }

  // Sorting and filtering the top retainers by their headers and the form.
  await page.goto(`${url}dominators`, { waitUntil: 'load' });
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('#dominators th a[href^="/dominators?sort=size"]')]);
  const sizes = await page.$$eval('#dominators tr', (trs) => trs.slice(1).map((tr) => Number(tr.querySelectorAll('td')[2]
    .textContent.split(' ')[0].replace(/,/g, ''))));
  check('dominators: sorted by size, largest first', sizes.length > 0 && sizes.every((s, k) => k === 0 || sizes[k - 1] >= s),
        JSON.stringify(sizes.slice(0, 10)));
  await markup(page, 'dominators');
  check('no dialog opened (no script ran)', dialogs.length === 0, dialogs.join(','));
});
process.exit(failed());
