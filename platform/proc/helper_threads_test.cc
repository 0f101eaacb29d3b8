// The set*id wrappers stop every registered helper before the real call and
// start the ones that ran afterwards, once each, keeping the call's errno.
#include "platform/proc/helper_threads.h"

#include <errno.h>
#include <grp.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace libdump::proc {
namespace {

std::string g_log;
bool g_running = true;

bool Stop() {
  g_log += "stop ";
  const bool was = g_running;
  g_running = false;
  return was;
}
void Start() {
  g_log += "start ";
  g_running = true;
}
const HelperThread kHelper{Stop, Start};

bool StopIdle() {
  g_log += "stop-idle ";
  return false;
}
void StartIdle() { g_log += "start-idle "; }
const HelperThread kIdle{StopIdle, StartIdle};

// Each test may run in a process of its own: each registers (again).
void Register() {
  RegisterHelperThread(&kHelper);
  RegisterHelperThread(&kIdle);
  RegisterHelperThread(&kHelper);  // once only
}

TEST(HelperThreads, SetidCallsRunWithHelpersStopped) {
  Register();
  g_log.clear();
  // No change at all: allowed to anyone.
  ASSERT_EQ(setresuid(static_cast<uid_t>(-1), static_cast<uid_t>(-1), static_cast<uid_t>(-1)), 0);
  EXPECT_EQ(g_log, "stop stop-idle start ");
  EXPECT_TRUE(g_running);
  g_log.clear();
  ASSERT_EQ(setegid(getegid()), 0);
  EXPECT_EQ(g_log, "stop stop-idle start ");
}

TEST(HelperThreads, ErrnoOfTheRealCallSurvives) {
  Register();
  g_log.clear();
  // More groups than NGROUPS_MAX (65536): refused even to root.
  const std::vector<gid_t> groups(70000, getegid());
  errno = 0;
  EXPECT_EQ(setgroups(groups.size(), groups.data()), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(g_log, "stop stop-idle start ");
}

}  // namespace
}  // namespace libdump::proc
