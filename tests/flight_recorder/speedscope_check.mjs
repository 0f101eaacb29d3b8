// Loads flight recorder traces into speedscope (npm, pinned in
// speedscope/package-lock.json) running in Debian's headless Chromium, the
// way speedscope's own CLI opens a file (#localProfilePath), and checks what
// the page shows: one profile per thread, named after the thread, and each
// thread's regions in its sandwich view. THREAD~TEXT asks for a frame of
// the thread whose label contains TEXT: speedscope labels a slice with its
// name and its args, so a CPU sample's or a wait's stack shows there.
//
//   node speedscope_check.mjs TRACE.json THREAD:REGION|THREAD~TEXT... [-- TRACE.json ...]
//
// Fails (never skips) when chromium or the package is missing.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const release = path.join(here, 'speedscope/node_modules/speedscope/dist/release/index.html')
if (!fs.existsSync(release)) {
  console.log(`FAIL: speedscope not installed in ${here}/speedscope (scripts/setup.sh runs npm ci there)`)
  process.exit(1)
}
const chromium = ['chromium', 'chromium-browser'].find(
  c => spawnSync('sh', ['-c', `command -v ${c}`]).status === 0,
)
if (!chromium) {
  console.log('FAIL: chromium not found (scripts/setup.sh installs it)')
  process.exit(1)
}

// Runs in the page after speedscope's index.html: loads the profile, then
// selects each thread's profile in turn and reads the sandwich view's table.
function pageScript(name, base64) {
  return `speedscope.loadFileFromBase64(${JSON.stringify(name)}, ${JSON.stringify(base64)});
const out = [];
function collect(i) {
  const rows = document.querySelectorAll('tr[title]');
  if (i >= rows.length) {
    const pre = document.createElement('pre');
    pre.id = 'libdump-result';
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
    return;
  }
  rows[i].dispatchEvent(new MouseEvent('click', {bubbles: true}));
  rows[i].dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
  // The sandwich table renders after the selection: poll until it has
  // cells beyond the profile list's three a row (or 3 s of page time).
  let polls = 0;
  const read = () => {
    const cells = Array.from(document.querySelectorAll('td')).map(td => td.textContent);
    if (cells.length <= 3 * rows.length && ++polls < 15) return setTimeout(read, 200);
    out.push({profile: rows[i].title, frames: cells});
    collect(i + 1);
  };
  setTimeout(read, 200);
}
setTimeout(() => collect(0), 1000);
`
}

const groups = []
for (const a of process.argv.slice(2)) {
  if (a === '--' || groups.length === 0) groups.push({ trace: null, want: [] })
  if (a === '--') continue
  const g = groups[groups.length - 1]
  if (g.trace === null) g.trace = a
  else g.want.push(a)
}
let failures = 0
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'libdump-speedscope-'))
for (const g of groups) {
  const js = path.join(tmp, path.basename(g.trace) + '.js')
  fs.writeFileSync(js, pageScript(path.basename(g.trace), fs.readFileSync(g.trace).toString('base64')))
  const url = `file://${release}#localProfilePath=${js}&view=sandwich`
  const r = spawnSync(chromium, ['--headless', '--no-sandbox', '--disable-gpu', '--user-data-dir=' + path.join(tmp, 'profile'),
    '--allow-file-access-from-files', '--virtual-time-budget=60000', '--dump-dom', url],
    { encoding: 'utf8', timeout: 120000, maxBuffer: 64 << 20 })
  const m = /<pre id="libdump-result">(.*?)<\/pre>/s.exec(r.stdout || '')
  if (!m) {
    console.log(`FAIL: ${g.trace}: speedscope showed no profiles (chromium status ${r.status}): ${(r.stderr || '').slice(-400)}`)
    failures++
    continue
  }
  const unescape = s => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&amp;/g, '&')
  const shown = JSON.parse(unescape(m[1]))
  for (const w of g.want) {
    const contains = /^[^:~]*~/.test(w)
    const at = contains ? w.indexOf('~') : w.indexOf(':')
    const thread = w.slice(0, at)
    const region = w.slice(at + 1)
    const p = shown.find(s => s.profile.includes(`, ${thread} (tid `))
    const match = f => contains ? f.includes(region) : f === region || f.startsWith(region + ' {')
    if (!p) {
      console.log(`FAIL: ${g.trace}: no speedscope profile for thread ${thread}; profiles: ${shown.map(s => s.profile).join(' | ')}`)
      failures++
    } else if (!p.frames.some(match)) {
      console.log(`FAIL: ${g.trace}: thread ${thread}'s profile has no frame ${contains ? 'containing ' : ''}${region}: ${p.frames.join(' | ')}`)
      failures++
    } else if (contains) {
      console.log(`${g.trace}: thread ${thread}'s profile shows ${p.frames.find(match)}`)
    }
  }
  if (failures === 0) console.log(`${g.trace}: speedscope shows ${shown.length} thread profiles: ${shown.map(s => s.profile).join(' | ')}`)
}
fs.rmSync(tmp, { recursive: true, force: true })
process.exit(failures ? 1 : 0)
