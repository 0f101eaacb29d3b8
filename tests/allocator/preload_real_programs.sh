#!/usr/bin/env bash
# Runs a real program with and without LD_PRELOAD=libdump.so and requires the
# same output and exit status. Usage: preload_real_programs.sh LIBDUMP_SO CASE [MT_PROGRAM]
# CASE: python | gxx | sqlite | git | mt
set -uo pipefail
so=$1
case_name=$2
mt_program=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }

# run NAME CMD...: runs CMD twice, plain and preloaded; compares stdout,
# stderr and exit status.
run() {
  local name=$1
  shift
  "$@" >"$name.plain.out" 2>"$name.plain.err"
  local plain=$?
  LD_PRELOAD=$so "$@" >"$name.pre.out" 2>"$name.pre.err"
  local pre=$?
  [ "$plain" = "$pre" ] || { cat "$name.pre.err" >&2; fail "$name: exit status $plain without libdump, $pre with it"; }
  cmp -s "$name.plain.out" "$name.pre.out" || { diff "$name.plain.out" "$name.pre.out" | head -20 >&2; fail "$name: stdout differs"; }
  cmp -s "$name.plain.err" "$name.pre.err" || { diff "$name.plain.err" "$name.pre.err" | head -20 >&2; fail "$name: stderr differs"; }
  echo "ok: $name (exit $plain, $(wc -c <"$name.pre.out") bytes of output)"
}

# The preload must really be in effect: the program's malloc must be libdump's.
LD_PRELOAD=$so python3 -c 'import ctypes, sys; sys.exit(not hasattr(ctypes.CDLL(None), "_ZN7libdump12GetHeapStatsEv"))' ||
  fail "libdump's symbols are not visible in a preloaded process"

case $case_name in
python)
  cat >script.py <<'PY'
import json, random, threading, collections
random.seed(1)
d = {}
for i in range(400000):
    d["key%d" % i] = [i, str(i) * (i % 7), {"n": i, "t": (i, -i)}]
l = [list(range(i % 97)) for i in range(150000)]
c = collections.Counter(random.randrange(1000) for _ in range(300000))
del d["key5"]
s = sorted(d.items(), key=lambda kv: len(kv[1][1]))[:3]
out = []
def work(n):
    out.append(len(json.dumps([{"k": j, "v": "x" * (j % 50)} for j in range(20000 + n)])))
ts = [threading.Thread(target=work, args=(i,)) for i in range(6)]
[t.start() for t in ts]; [t.join() for t in ts]
print(len(d), sum(map(len, l)), c.most_common(2), s[0][0], sorted(out))
PY
  run python python3 script.py
  ;;
gxx)
  cat >prog.cc <<'CC'
#include <algorithm>
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <vector>
template <int N> struct Fib { static constexpr long v = Fib<N - 1>::v + Fib<N - 2>::v; };
template <> struct Fib<0> { static constexpr long v = 0; };
template <> struct Fib<1> { static constexpr long v = 1; };
int main() {
  std::map<std::string, std::vector<int>> m;
  for (int i = 0; i < 1000; ++i) m[std::to_string(i % 37)].push_back(i);
  std::regex r("([0-9]+)-([a-z]+)");
  std::smatch sm;
  std::string s = "123-abc";
  std::regex_match(s, sm, r);
  std::cout << m.size() << " " << Fib<60>::v << " " << sm[2] << "\n";
}
CC
  run gxx-compile g++ -std=c++20 -O2 -Wall -c prog.cc -o prog.o
  # The compiler's output must be byte for byte the same.
  mv prog.o prog.pre.o
  g++ -std=c++20 -O2 -Wall -c prog.cc -o prog.o || fail "plain compile"
  cmp -s prog.o prog.pre.o || fail "g++ produced a different object file under libdump"
  run gxx-link g++ prog.o -o prog
  run gxx-run ./prog
  ;;
sqlite)
  cat >load.sql <<'SQL'
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);
WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 300000)
  INSERT INTO t SELECT x, printf('%08d-%s', (x * 7919) % 1000003, hex(x)), x * 1.5 FROM n;
CREATE INDEX tb ON t(b);
SELECT count(*), sum(c), max(length(b)) FROM t;
SELECT a, b FROM t WHERE b LIKE '00001%' ORDER BY b LIMIT 5;
SELECT substr(b, 1, 2) AS k, count(*) FROM t GROUP BY k ORDER BY 2 DESC, 1 LIMIT 5;
DELETE FROM t WHERE a % 3 = 0;
VACUUM;
SELECT count(*) FROM t;
SQL
  run sqlite sh -c 'rm -f db.sqlite && sqlite3 db.sqlite < load.sql && sqlite3 db.sqlite "PRAGMA integrity_check; SELECT count(*) FROM t;"'
  ;;
git)
  export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
  export GIT_AUTHOR_DATE="2024-01-01T00:00:00Z" GIT_COMMITTER_DATE="2024-01-01T00:00:00Z"
  script='set -e
    rm -rf repo && git init -q -b main repo && cd repo
    for i in $(seq 1 40); do
      seq $i 3 3000 > file$((i % 7)).txt; echo "change $i" >> log.txt
      git add -A && git commit -qm "commit $i"
    done
    git log --stat --format="%H %s" | head -200
    git diff HEAD~10 --stat
    git gc -q && git fsck --strict 2>&1
    git rev-list --all --objects | sort | head -50
    git blame -s file3.txt | tail -5'
  run git sh -c "$script"
  ;;
mt)
  [ -x "$mt_program" ] || fail "no multithreaded program given"
  run mt "$mt_program"
  grep -q "child=7" mt.pre.out || fail "the forked child did not run correctly under libdump"
  ;;
*)
  fail "unknown case $case_name"
  ;;
esac
