#!/usr/bin/env bash
# cmake --install, then a separate project finds libdump with find_package and
# with pkg-config, builds and runs.
#   install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S "$src/tests/install_consumer" -B "$prefix/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/consumer-build" >/dev/null
"$prefix/consumer-build/consumer"
flags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig pkg-config --cflags --libs libdump-format)
echo "pkg-config: $flags"
# The flags must name the prefix it was installed to, wherever that is.
static_flags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig pkg-config --static --libs libdump-format)
g++ -std=c++20 "$src/tests/install_consumer/consumer.cc" -o "$prefix/consumer-pc" $flags $static_flags
"$prefix/consumer-pc"
echo "PASS: find_package(libdump) and pkg-config libdump-format"
