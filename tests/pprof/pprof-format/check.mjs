// A second real reader of libdump's profiles, beside go tool pprof: Datadog's
// pprof-format decoder (npm, pinned in package-lock.json). It decodes what
// pprof_profile_writer wrote into DIR; this script then checks what the
// decoder accepts without complaint but another reader would trip on (string
// indices, ids and references, value counts), and the known content.
//   node check.mjs DIR
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { Profile } from 'pprof-format';

const dir = process.argv[2];
let failures = 0;
const fail = (what) => { console.log(`FAIL: ${what}`); failures++; };
const ok = (what) => console.log(`ok: ${what}`);

function decode(name) {
  const raw = readFileSync(`${dir}/${name}`);
  if (raw[0] !== 0x1f || raw[1] !== 0x8b) throw new Error(`${name}: not gzip-compressed`);
  return Profile.decode(gunzipSync(raw));
}

// Every reference resolves; returns the problems found.
function structure(p) {
  const problems = [];
  const strings = p.stringTable.strings;
  if (strings[0] !== '') problems.push('string 0 is not ""');
  const str = (what, i) => {
    if (Number(i) < 0 || Number(i) >= strings.length) problems.push(`${what}: string ${i} of ${strings.length}`);
  };
  p.sampleType.forEach((t, i) => { str(`sample_type ${i} type`, t.type); str(`sample_type ${i} unit`, t.unit); });
  if (p.periodType) { str('period_type type', p.periodType.type); str('period_type unit', p.periodType.unit); }
  str('default_sample_type', p.defaultSampleType);
  str('drop_frames', p.dropFrames);
  str('keep_frames', p.keepFrames);
  p.comment.forEach((c, i) => str(`comment ${i}`, c));
  const ids = (what, list) => {
    const set = new Set();
    for (const x of list) {
      const id = Number(x.id);
      if (id === 0 || set.has(id)) problems.push(`${what} id ${id} is 0 or repeated`);
      set.add(id);
    }
    return set;
  };
  const mappings = ids('mapping', p.mapping);
  const functions = ids('function', p.function);
  const locations = ids('location', p.location);
  for (const m of p.mapping) {
    str(`mapping ${m.id} filename`, m.filename);
    str(`mapping ${m.id} build_id`, m.buildId);
    if (BigInt(m.memoryStart) >= BigInt(m.memoryLimit)) problems.push(`mapping ${m.id}: empty address range`);
  }
  for (const f of p.function) {
    str(`function ${f.id} name`, f.name);
    str(`function ${f.id} system_name`, f.systemName);
    str(`function ${f.id} filename`, f.filename);
  }
  for (const l of p.location) {
    if (Number(l.mappingId) !== 0 && !mappings.has(Number(l.mappingId))) {
      problems.push(`location ${l.id}: no mapping ${l.mappingId}`);
    }
    for (const line of l.line) {
      if (!functions.has(Number(line.functionId))) problems.push(`location ${l.id}: no function ${line.functionId}`);
    }
  }
  if (p.sample.length === 0) problems.push('no samples');
  p.sample.forEach((s, i) => {
    if (s.value.length !== p.sampleType.length) {
      problems.push(`sample ${i}: ${s.value.length} values for ${p.sampleType.length} types`);
    }
    if (s.locationId.length === 0) problems.push(`sample ${i}: no stack`);
    for (const id of s.locationId) if (!locations.has(Number(id))) problems.push(`sample ${i}: no location ${id}`);
    for (const l of s.label) {
      str(`sample ${i} label key`, l.key);
      str(`sample ${i} label str`, l.str);
      str(`sample ${i} label unit`, l.numUnit);
    }
  });
  return problems;
}

// Views by name: sample types, and the function names of a sample's stack
// (every line of every location: inlined frames count).
function view(p) {
  const s = p.stringTable.strings;
  const types = p.sampleType.map((t) => `${s[Number(t.type)]}/${s[Number(t.unit)]}`);
  const fn = new Map(p.function.map((f) => [Number(f.id), f]));
  const loc = new Map(p.location.map((l) => [Number(l.id), l]));
  const fname = (ln) => s[Number(fn.get(Number(ln.functionId)).name)];
  const names = (sample) => sample.locationId.flatMap((id) => loc.get(Number(id)).line.map(fname));
  // Sum of one value over the samples whose stack has a function named like `like`.
  const sum = (type, like) => {
    const k = types.indexOf(type);
    return p.sample.filter((x) => names(x).some((n) => n.includes(like))).reduce((a, x) => a + Number(x.value[k]), 0);
  };
  return { s, types, fn, fname, sum, dflt: s[Number(p.defaultSampleType)] };
}

function check(name, test) {
  let p;
  try {
    p = decode(name);
  } catch (e) {
    fail(`${name}: pprof-format cannot decode it: ${e.message}`);
    return;
  }
  const problems = structure(p);
  if (problems.length) {
    problems.slice(0, 10).forEach((x) => fail(`${name}: ${x}`));
    return;  // the content checks below follow the references
  }
  ok(`${name}: decoded, ${p.sample.length} samples, every reference resolves`);
  test(p, view(p));
}

const expect = (what, cond) => (cond ? ok(what) : fail(what));

check('cpu.pprof', (p, v) => {
  expect(`cpu sample types ${v.types}`, v.types.join() === 'samples/count,cpu/nanoseconds');
  expect(`cpu period ${p.period} ns (100 Hz)`, Number(p.period) === 10000000);
  // 300 ms of thread CPU in ProfWriterBurn: 30 periods, each sample weighted
  // by the periods its signal stands for; a few ms of start-up around it.
  const burn = v.sum('cpu/nanoseconds', 'ProfWriterBurn') / 1e6;
  expect(`cpu ProfWriterBurn ${burn} ms of 300`, burn >= 250 && burn <= 350);
});

const allocLine = Number(readFileSync(`${dir}/alloc_line`, 'utf8'));
for (const [name, dflt] of [['heap.pprof', 'inuse_space'], ['allocs.pprof', 'alloc_space']]) {
  check(name, (p, v) => {
    expect(`${name} sample types ${v.types}`,
      v.types.join() === 'alloc_objects/count,alloc_space/bytes,inuse_objects/count,inuse_space/bytes');
    expect(`${name} default sample type ${v.dflt}`, v.dflt === dflt);
    // Every allocation sampled (rate 1): counts are exact, not estimates.
    const alloc = v.sum('alloc_objects/count', 'ProfWriterAlloc');
    const inuse = v.sum('inuse_objects/count', 'ProfWriterAlloc');
    expect(`${name} ProfWriterAlloc alloc_objects ${alloc} of 1000, inuse_objects ${inuse} of 600`,
      alloc === 1000 && inuse === 600);
    const size = v.sum('alloc_space/bytes', 'ProfWriterAlloc') / alloc;
    expect(`${name} ${size} bytes per object, in use and allocated alike (4000 asked)`,
      size >= 4000 && v.sum('inuse_space/bytes', 'ProfWriterAlloc') === size * inuse);
    // The allocating call's line, from DWARF.
    const at = p.location.flatMap((l) => l.line).find((ln) => v.fname(ln).includes('ProfWriterAlloc'));
    const file = at && v.s[Number(v.fn.get(Number(at.functionId)).filename)];
    expect(`${name} ProfWriterAlloc at ${file}:${at && at.line}, line ${allocLine} expected`,
      at !== undefined && Number(at.line) === allocLine && file.endsWith('profile_writer.cc'));
  });
}
// ProfWriterBlocked waited once, at least 45 ms (a 50 ms sleep, which a
// loaded machine stretches), for the mutex ProfWriterHold held.
for (const [name, fn] of [['block.pprof', 'ProfWriterBlocked'], ['mutex.pprof', 'ProfWriterHold']]) {
  check(name, (p, v) => {
    expect(`${name} sample types ${v.types}`, v.types.join() === 'contentions/count,delay/nanoseconds');
    const n = v.sum('contentions/count', fn);
    const ms = v.sum('delay/nanoseconds', fn) / 1e6;
    expect(`${name} ${fn}: ${n} contention of ${ms} ms (1 of >= 45 expected)`, n === 1 && ms >= 45 && ms < 5000);
  });
}
process.exit(failures ? 1 : 0);
