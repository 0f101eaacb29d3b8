// Protocol Buffers messages (Debian's libprotobuf) with known counts: 2,000
// orders of 5 line items, 2 notes and 3 tags each, held in a vector of
// unique_ptrs. Asks for a heap dump with SIGUSR2 (LD_PRELOAD=libdump.so,
// LIBDUMP_HEAPDUMP_SIGNAL=USR2) and waits until the dump ARGV[1] exists.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "shop.pb.h"

namespace {

constexpr int kOrders = 2000, kItems = 5, kNotes = 2, kTags = 3;

std::string Long(const char* what, int i) { return std::string(what) + " number " + std::to_string(i) + " of many"; }

std::vector<std::unique_ptr<shop::Order>> g_orders;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: protobuf_program DUMP\n");
    return 2;
  }
  g_orders.reserve(kOrders);
  for (int i = 0; i < kOrders; ++i) {
    auto o = std::make_unique<shop::Order>();
    o->set_id(i);
    o->set_customer(Long("customer", i));
    for (int k = 0; k < kItems; ++k) {
      shop::LineItem* item = o->add_items();
      item->set_sku(i * kItems + k);
      item->set_title(Long("title", k));
      item->set_quantity(k + 1);
    }
    for (int k = 0; k < kNotes; ++k) o->add_notes(Long("note", k));
    for (int k = 0; k < kTags; ++k) (*o->mutable_tags())[k] = Long("tag", k);
    g_orders.push_back(std::move(o));
  }
  raise(SIGUSR2);
  struct stat st;
  for (int k = 0; k < 600 && stat(argv[1], &st) != 0; ++k) usleep(100 * 1000);
  size_t items = 0;
  for (const auto& o : g_orders) items += o->items_size();
  printf("%zu %zu\n", g_orders.size(), items);
  return 0;
}
