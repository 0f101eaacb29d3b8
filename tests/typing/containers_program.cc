// A program of plain structs in standard containers with known counts, for
// the typing pass's tests (tests/typing/typing_containers.sh): it builds its
// data, asks for a heap dump with SIGUSR2 (LD_PRELOAD=libdump.so,
// LIBDUMP_HEAPDUMP_SIGNAL=USR2) and waits until the dump ARGV[1] exists.
// ARGV[2], when given, multiplies every count (bench/typing/).
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

struct Account {
  uint64_t id;
  double balance;
  char tag[16];
};

struct Ledger {
  std::vector<Account> entries;  // one body of kLedger elements
  std::string owner;             // a long string: one buffer
  std::list<Account> journal;    // kJournal nodes
};

constexpr int kAccounts = 1000;  // std::map nodes
constexpr int kLedger = 500;     // std::vector<Account> elements
constexpr int kNames = 800;      // std::unordered_map nodes, each with a long string buffer
constexpr int kJournal = 300;    // std::list nodes
constexpr int kQueue = 10000;    // std::deque<int> elements (128 a block)
constexpr int kTags = 200;       // std::set<std::string> nodes, each with a long string buffer
constexpr int kLines = 400;      // std::vector<std::string> elements, each with a long string buffer

std::map<int, Account> g_accounts;
std::unordered_map<uint64_t, std::string> g_names;
std::deque<int> g_queue;
std::set<std::string> g_tags;
std::vector<std::string> g_lines;
Ledger* g_ledger;

static std::string Long(const char* what, int i) {
  char b[64];
  snprintf(b, sizeof b, "%s-%06d-padded-beyond-the-small-string-buffer", what, i);
  return b;
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: containers_program DUMP [SCALE]\n");
    return 2;
  }
  const int scale = argc == 3 ? atoi(argv[2]) : 1;
  if (scale < 1 || scale > 10000) {
    fprintf(stderr, "containers_program: SCALE must be 1 to 10000\n");
    return 2;
  }
  const int accounts = kAccounts * scale, ledger = kLedger * scale, names = kNames * scale, journal = kJournal * scale,
            queue = kQueue * scale, tags = kTags * scale, lines = kLines * scale;
  for (int i = 0; i < accounts; ++i) g_accounts[i] = Account{static_cast<uint64_t>(i), i * 1.5, "acct"};
  g_names.reserve(names);
  for (int i = 0; i < names; ++i) g_names.emplace(i, Long("name", i));
  for (int i = 0; i < queue; ++i) g_queue.push_back(i);
  for (int i = 0; i < tags; ++i) g_tags.insert(Long("tag", i));
  g_lines.reserve(lines);
  for (int i = 0; i < lines; ++i) g_lines.push_back(Long("line", i));
  g_ledger = new Ledger;
  g_ledger->entries.reserve(ledger);
  for (int i = 0; i < ledger; ++i) g_ledger->entries.push_back(Account{static_cast<uint64_t>(i), 0, "ledger"});
  g_ledger->owner = Long("owner", 0);
  for (int i = 0; i < journal; ++i) g_ledger->journal.push_back(Account{static_cast<uint64_t>(i), 1, "journal"});
  raise(SIGUSR2);
  struct stat st;
  for (int k = 0; k < 600 && stat(argv[1], &st) != 0; ++k) usleep(100 * 1000);
  printf("%zu %zu %zu %zu %zu %zu\n", g_accounts.size(), g_names.size(), g_queue.size(), g_tags.size(), g_lines.size(),
         g_ledger->journal.size());
  return 0;
}
