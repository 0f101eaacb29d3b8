#!/usr/bin/env python3
"""Checks a dump of glibc_heap_program against the program's bookkeeping.

  check_glibc_dump.py BOOKKEEPING RECORDS   (RECORDS: `readdump --records DUMP`)

Exact: the dump's objects are the program's held blocks (each at its address
with its malloc_usable_size), the dtv blocks pthread_create calloc'd for the
four threads, and one tcache struct per thread that allocated (main and four
workers: 5 blocks of 648 bytes, glibc 2.36's tcache_perthread_struct of 640
bytes in a 656-byte chunk) -- nothing else, nothing missing, and none of the
freed blocks. malloc's own totals agree: mallinfo2's hblkhd is the chunks of
the mmapped blocks (usable + 16 each), and its uordblks is every in-use
arena chunk (usable + 8), the chunks sitting in a tcache (which mallinfo
counts as in use) and the four non-main arenas' headers (heap_info and
malloc_state, 2256 bytes each; see the note below)."""
import re
import sys

TCACHE_STRUCT = 648
ARENA_HEADER = 2256  # sizeof(heap_info) 48 + sizeof(malloc_state) 2200, aligned up to 16 for the first chunk's payload
MMAP_THRESHOLD = 128 * 1024


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


book = {"held": {}, "freed": set(), "dtv": {}}
totals = {}
for line in open(sys.argv[1]):
    k, a, b = line.split()
    if k == "held":
        book["held"][int(a, 16)] = int(b)
    elif k == "freed":
        book["freed"].add(int(a, 16))
    elif k == "dtv":
        book["dtv"][int(a, 16)] = int(b)
    else:
        totals[k] = (int(a), int(b))

objects = {}
obj_re = re.compile(r"^object .*\baddr=(0x[0-9a-f]+) .*\bsize=(\d+)")
for line in open(sys.argv[2]):
    m = obj_re.match(line)
    if m:
        a = int(m.group(1), 16)
        if a in objects:
            fail("object 0x%x twice" % a)
        objects[a] = int(m.group(2))

held, dtv = book["held"], book["dtv"]
if totals["total"] != (len(held), sum(held.values())):
    fail("bookkeeping totals disagree with its own lines")
missing = [a for a in held if objects.get(a) != held[a]]
if missing:
    a = missing[0]
    fail("%d held blocks missing or of the wrong size, first 0x%x (%d bytes, dump says %s)"
         % (len(missing), a, held[a], objects.get(a)))
live_freed = sorted(book["freed"] & set(objects))
if live_freed:
    fail("%d freed blocks are live in the dump, first 0x%x" % (len(live_freed), live_freed[0]))
for a, n in dtv.items():
    if objects.get(a) != n:
        fail("dtv 0x%x (%d bytes) not in the dump (%s)" % (a, n, objects.get(a)))
extra = {a: n for a, n in objects.items() if a not in held and a not in dtv}
tcache_structs = [a for a, n in extra.items() if n == TCACHE_STRUCT]
others = {a: n for a, n in extra.items() if n != TCACHE_STRUCT}
if len(tcache_structs) != 5 or others:
    fail("beyond the program's blocks and the dtvs: %d blocks of %d bytes (5 tcache structs expected) and %s"
         % (len(tcache_structs), TCACHE_STRUCT,
            ", ".join("0x%x (%d bytes)" % kv for kv in sorted(others.items())[:10]) or "nothing else"))

uordblks, hblkhd = totals["mallinfo2"]
tcache_chunks = totals["tcache_chunk_bytes"][0]
mmapped = sum(n + 16 for n in objects.values() if n >= MMAP_THRESHOLD)
arena = sum(n + 8 for n in objects.values() if n < MMAP_THRESHOLD)
if mmapped != hblkhd:
    fail("mmapped chunks %d bytes, mallinfo2 hblkhd %d" % (mmapped, hblkhd))
if arena + tcache_chunks + 4 * ARENA_HEADER != uordblks:
    fail("arena chunks %d + tcache %d + 4 arena headers %d = %d bytes, mallinfo2 uordblks %d (off by %d)"
         % (arena, tcache_chunks, 4 * ARENA_HEADER, arena + tcache_chunks + 4 * ARENA_HEADER, uordblks,
            uordblks - arena - tcache_chunks - 4 * ARENA_HEADER))
print("PASS: %d objects, %d bytes: %d held (%d bytes), %d dtvs, 5 tcache structs; hblkhd %d, uordblks %d"
      % (len(objects), sum(objects.values()), len(held), sum(held.values()), len(dtv), hblkhd, uordblks))
