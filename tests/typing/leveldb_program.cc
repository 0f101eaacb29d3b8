// Debian's LevelDB (libleveldb, stripped) holding data, for the typing pass's
// test on a real stripped library (tests/typing/typing_leveldb.sh): it opens
// a database in the directory ARGV[2], writes KEYS records, compacts them into
// a table, writes KEYS more (they stay in the memtable), reads the first ones
// back (the table's blocks enter the block cache), asks for a heap dump with
// SIGUSR2 (LD_PRELOAD=libdump.so, LIBDUMP_HEAPDUMP_SIGNAL=USR2) and waits
// until the dump ARGV[1] exists. ARGV[3], when given, is KEYS (2000).
#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/options.h>
#include <leveldb/write_batch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace {

std::string Key(int i) {
  char b[32];
  snprintf(b, sizeof b, "user:%08d", i);
  return b;
}

// A value of 100 to 227 bytes that says whose it is.
std::string Value(int i) { return "record " + std::to_string(i) + " " + std::string(100 + i % 128, 'a' + i % 26); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: leveldb_program DUMP DBDIR [KEYS]\n");
    return 2;
  }
  const int keys = argc >= 4 ? atoi(argv[3]) : 2000;
  std::unique_ptr<leveldb::Cache> cache(leveldb::NewLRUCache(8 << 20));
  leveldb::Options options;
  options.create_if_missing = true;
  options.block_cache = cache.get();
  leveldb::DB* raw = nullptr;
  leveldb::Status s = leveldb::DB::Open(options, argv[2], &raw);
  if (!s.ok()) {
    fprintf(stderr, "open: %s\n", s.ToString().c_str());
    return 1;
  }
  std::unique_ptr<leveldb::DB> db(raw);
  for (int i = 0; i < keys; ++i) db->Put(leveldb::WriteOptions(), Key(i), Value(i));
  db->CompactRange(nullptr, nullptr);  // the first half in a table on disk
  for (int i = keys; i < 2 * keys; ++i) db->Put(leveldb::WriteOptions(), Key(i), Value(i));  // the memtable
  int found = 0;
  std::string v;
  for (int i = 0; i < 2 * keys; ++i) found += db->Get(leveldb::ReadOptions(), Key(i), &v).ok() && v == Value(i);
  raise(SIGUSR2);
  struct stat st;
  for (int k = 0; k < 600 && stat(argv[1], &st) != 0; ++k) usleep(100 * 1000);
  printf("%d\n", found);
  return 0;
}
