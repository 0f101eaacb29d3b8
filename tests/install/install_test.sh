#!/usr/bin/env bash
# cmake --install, then separate projects use the installed libdump:
# find_package(libdump) with one program per public target (libdump::format,
# hprof, pprof, heap, runtime, samplers, prof_preload, and a C program on
# libdump::runtime), built as C++17 and as C++20; then pkg-config libdump-format,
# libdump (from C) and libdump-profiler, without --static.
#   install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
programs="use_format use_hprof use_pprof use_heap use_runtime use_samplers use_prof_preload use_c"
for std in 17 20; do
  b=$prefix/consumer-$std
  cmake -S "$src/tests/install/consumer" -B "$b" -DCMAKE_PREFIX_PATH="$prefix" -DCONSUMER_CXX_STANDARD=$std >/dev/null
  cmake --build "$b" -j2 >/dev/null
  for p in $programs; do
    "$b/$p" || { echo "FAIL: $p (C++$std) exited $?"; exit 1; }
  done
  # The runtime's headers really are C++17: its program was compiled as such.
  grep -q -- '-std=c++17' "$b/CMakeFiles/use_runtime.dir/flags.make" || [ $std = 20 ] ||
    { echo "FAIL: use_runtime not compiled as C++17"; exit 1; }
  echo "find_package(libdump), C++$std: $programs ok"
done

# Archives are libdump_<name>.a, shared libraries carry a versioned SONAME.
libdir=$(dirname "$(find "$prefix" -name libdump.so -print -quit)")
[ -z "$(find "$prefix" -name 'liblibdump*')" ] || { echo "FAIL: liblibdump_* archives installed"; exit 1; }
for so in libdump.so libdumpprof.so; do
  soname=$(objdump -p "$libdir/$so" | awk '/SONAME/ {print $2}')
  [[ $soname =~ ^$so\.[0-9]+\.[0-9]+$ ]] || { echo "FAIL: $so has SONAME '$soname'"; exit 1; }
done

export PKG_CONFIG_PATH=$libdir/pkgconfig
pc() { pkg-config "$@"; }
# The flags must name the prefix it was installed to, wherever that is.
pc --cflags libdump-format | grep -q -- "-I$prefix/" || { echo "FAIL: pkg-config names another prefix"; exit 1; }
g++ -std=c++20 "$src/tests/install/consumer/use_format.cc" -o "$prefix/pc-format" $(pc --cflags --libs libdump-format)
g++ -std=c++20 "$src/tests/install/consumer/use_pprof.cc" -o "$prefix/pc-pprof" $(pc --cflags --libs libdump-format)
gcc -std=c99 -pedantic -Werror -D_POSIX_C_SOURCE=200809L "$src/tests/install/consumer/use_c.c" -o "$prefix/pc-c" \
  $(pc --cflags --libs libdump)
g++ -std=c++20 "$src/tests/install/consumer/use_samplers.cc" -o "$prefix/pc-profiler" \
  $(pc --cflags --libs libdump-profiler)
for p in pc-format pc-pprof pc-c pc-profiler; do
  LD_LIBRARY_PATH=$libdir "$prefix/$p" || { echo "FAIL: $p exited $?"; exit 1; }
done
echo "PASS: find_package(libdump) for every public target in C++17 and C++20; pkg-config libdump-format, libdump, libdump-profiler"
