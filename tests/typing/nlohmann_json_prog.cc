// A real third-party library's data for the typing pass's DWARF rule:
// Debian's nlohmann-json3-dev parsing a generated document of 10000 records
// (objects, arrays, strings, numbers), held on the heap. Built -g -O0; run
// under LD_PRELOAD=libdump.so with LIBDUMP_HEAPDUMP_SIGNAL=USR2, it writes
// "ready" and waits for the signal's dump (tests/typing/dwarf_rule_json_test.sh).
// ARGV[1], when given, is the number of records (bench/typing/: 60000 make
// about a million objects).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

nlohmann::json* g_document;

int main(int argc, char** argv) {
  const int records = argc > 1 ? std::atoi(argv[1]) : 10000;
  std::string text = "{\"service\": \"accounts ledger of the test program\", \"records\": [";
  for (int i = 0; i < records; ++i) {
    if (i) text += ",";
    text += "{\"id\": " + std::to_string(i) + ", \"owner\": \"owner name number " + std::to_string(i) +
            " of the ledger\", \"balance\": " + std::to_string(i * 1.25) + ", \"tags\": [\"tag-alpha-" +
            std::to_string(i % 7) + "-long-enough\", \"tag-beta\"], \"active\": " + (i % 2 ? "true" : "false") +
            ", \"limits\": {\"daily\": " + std::to_string(i * 10) + ", \"monthly\": " + std::to_string(i * 300) + "}}";
  }
  text += "]}";
  g_document = new nlohmann::json(nlohmann::json::parse(text));
  text.clear();
  text.shrink_to_fit();
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) pause();
}
