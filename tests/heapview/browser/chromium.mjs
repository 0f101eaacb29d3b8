// What heapview's browser checks share: Debian's chromium started headless
// through puppeteer-core with a throwaway profile, and ok/FAIL lines.
import puppeteer from 'puppeteer-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Prints one line per check; failed() says whether any failed.
export function checker() {
  let failed = 0;
  const check = (what, ok, detail = '') => {
    console.log(`${ok ? 'ok' : 'FAIL'}: ${what}${ok || !detail ? '' : ` (${detail})`}`);
    if (!ok) failed = 1;
  };
  return { check, failed: () => failed };
}

// Runs body(browser) and closes the browser and its profile whatever happens.
export async function withChromium(body) {
  const profile = mkdtempSync(join(tmpdir(), 'heapview-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', `--user-data-dir=${profile}`],
  });
  try {
    await body(browser);
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
}
