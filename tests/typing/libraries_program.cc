// Data held in other libraries' containers than libstdc++'s, with known
// counts: abseil's node_hash_map, flat_hash_map and btree_map (Debian's
// libabsl), Boost's unordered_map and container::flat_map. Asks for a heap
// dump with SIGUSR2 (LD_PRELOAD=libdump.so, LIBDUMP_HEAPDUMP_SIGNAL=USR2) and
// waits until the dump ARGV[1] exists. Every key and name is longer than a
// short string, so each owns a heap buffer.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <absl/container/btree_map.h>
#include <absl/container/flat_hash_map.h>
#include <absl/container/node_hash_map.h>
#include <boost/container/flat_map.hpp>
#include <boost/unordered_map.hpp>
#include <cstdio>
#include <memory>
#include <string>

namespace {

constexpr int kBlobs = 1000, kRecords = 3000, kOrders = 2000, kItems = 800, kSorted = 500;

// Zero bytes first: a node of node_hash_map {key, Blob*} then reads as a
// bucket array whose one node is the blob (a wrong name to refuse).
struct Blob {
  char bytes[200];
  int id;
};
struct Record {
  long id;
  double weight;
  std::string label;
};
struct Item {
  long sku;
  double price;
};

std::string Long(const char* what, int i) { return std::string(what) + " number " + std::to_string(i) + " of many"; }

absl::node_hash_map<int, std::unique_ptr<Blob>> g_blobs;
absl::flat_hash_map<std::string, Record> g_records;
absl::btree_map<int, Record> g_orders;
boost::unordered_map<int, Item> g_items;
boost::container::flat_map<int, Item> g_sorted;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: libraries_program DUMP\n");
    return 2;
  }
  for (int i = 0; i < kBlobs; ++i) g_blobs.emplace(i, std::make_unique<Blob>(Blob{{}, i}));
  for (int i = 0; i < kRecords; ++i) g_records.emplace(Long("key", i), Record{i, 0.5, Long("record", i)});
  for (int i = 0; i < kOrders; ++i) g_orders.emplace(i, Record{i, 1.5, Long("order", i)});
  for (int i = 0; i < kItems; ++i) g_items.emplace(i, Item{i, 2.5});
  g_sorted.reserve(kSorted);
  for (int i = 0; i < kSorted; ++i) g_sorted.emplace(i, Item{i, 3.5});
  raise(SIGUSR2);
  struct stat st;
  for (int k = 0; k < 600 && stat(argv[1], &st) != 0; ++k) usleep(100 * 1000);
  printf("%zu %zu %zu %zu %zu\n", g_blobs.size(), g_records.size(), g_orders.size(), g_items.size(), g_sorted.size());
  return 0;
}
