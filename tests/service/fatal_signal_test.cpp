// A crash leaves a report: conveyord killed by SIGSEGV (as a fault in any thread would
// raise it) writes the signal and a backtrace of conveyord's frames to stderr, the
// journal under systemd, then still dies of that signal, so systemd sees the crash and
// restarts it, and a core dump is kept where the host keeps them.
#include <gtest/gtest.h>

#include <string>

#include "daemon_process.h"
#include "service_test_util.h"

namespace conveyor::service_test {
namespace {

TEST(FatalSignal, ASegmentationFaultIsReportedWithABacktraceAndStillKillsTheDaemon) {
  const std::string dir = e2e::MakeTempDir();
  const std::string script = "'" CONVEYORD_PATH "' --config '' --workers cpu --cpu-threads 1 --listen unix:" + dir +
                             "/s.sock --metrics-listen '' 2>" + dir + "/err & pid=$!; "
                             "for i in $(seq 200); do [ -S " + dir + "/s.sock ] && break; sleep 0.05; done; "
                             "kill -SEGV $pid; wait $pid; echo $? >" + dir + "/rc";
  e2e::Shell(script);
  const std::string rc = ReadText(dir + "/rc");
  const std::string err = ReadText(dir + "/err");
  EXPECT_EQ(rc, "139\n") << "the shell's status for a death by SIGSEGV is 128 + 11\n" << err;
  EXPECT_NE(err.find("conveyord: fatal signal 11 (SEGV)"), std::string::npos) << err;
  EXPECT_NE(err.find("backtrace:\n"), std::string::npos) << err;
  EXPECT_NE(err.find("conveyord("), std::string::npos) << "no frame of conveyord in the backtrace:\n" << err;
  e2e::Shell("rm -rf '" + dir + "'");
}

}  // namespace
}  // namespace conveyor::service_test
