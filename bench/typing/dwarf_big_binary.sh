#!/usr/bin/env bash
# Builds a large -g C++ program (UNITS translation units of TYPES structs
# each, every struct in std::map, std::vector, std::unordered_map, std::list,
# std::deque and std::function), then times the typing pass's DWARF reader
# opening it (dwarf_rule_check --open: seconds and peak resident memory).
#   bench/typing/dwarf_big_binary.sh BUILD_DIR [UNITS] [TYPES]
# docs/TYPING.md ("DWARF (rule 2)", Figures) gives the figure.
set -euo pipefail
build=$1 units=${2:-24} types=${3:-100}
work=${LIBDUMP_BENCH_DIR:-$(mktemp -d)}
mkdir -p "$work"
for u in $(seq "$units"); do
  f="$work/unit$u.cc"
  [ -f "$f" ] && continue
  {
    echo '#include <deque>'
    echo '#include <functional>'
    echo '#include <list>'
    echo '#include <map>'
    echo '#include <string>'
    echo '#include <unordered_map>'
    echo '#include <vector>'
    echo "namespace unit$u {"
    for t in $(seq "$types"); do
      echo "struct Record$t { long id; std::string name; std::vector<int> values; double weight$t; };"
      echo "std::map<int, Record$t>* map$t = new std::map<int, Record$t>{{1, {}}};"
      echo "std::vector<Record$t>* vec$t = new std::vector<Record$t>(3);"
      echo "std::unordered_map<long, Record$t>* hash$t = new std::unordered_map<long, Record$t>{{2, {}}};"
      echo "std::list<Record$t>* list$t = new std::list<Record$t>(2);"
      echo "std::deque<Record$t>* deque$t = new std::deque<Record$t>(2);"
      echo "std::function<Record$t()>* fn$t = new std::function<Record$t()>([] { return Record$t{}; });"
    done
    echo "}"
  } >"$f"
done
echo 'int main() { return 0; }' >"$work/main.cc"
if [ ! -x "$work/big" ]; then
  for u in $(seq "$units"); do
    [ -f "$work/unit$u.o" ] || nice g++ -std=c++20 -g -O0 -c "$work/unit$u.cc" -o "$work/unit$u.o"
  done
  g++ -g "$work"/unit*.o "$work/main.cc" -o "$work/big"
fi
ls -l "$work/big" | awk '{ printf "binary: %.1f MB\n", $5 / 1e6 }'
eu-readelf -S "$work/big" | awk '$2 == ".debug_info" { printf ".debug_info: %.1f MB\n", strtonum("0x" $6) / 1e6 }'
for run in 1 2 3; do "$build/tests/dwarf_rule_check" --open "$work/big"; done
