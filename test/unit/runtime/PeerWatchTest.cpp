//===- PeerWatchTest.cpp - processes that notice a lost peer --------------===//
//
// Three watches in one process stand for three processes: each connects to
// the others over TCP. One dropped without a goodbye (as a killed process's
// sockets are closed by the kernel) is reported by both others, at once,
// with its rank, host and pid; one that stops in order is not; a peer that
// connects and then says nothing is reported when its silence runs out.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/PeerWatch.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace {

using namespace whale::rt;
using namespace std::chrono_literals;

/// What a watch reported, waited for.
struct Reports {
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::string> seen;
  std::vector<int> lost;
  std::function<void(int, const std::string &)> sink() {
    return [this](int rank, const std::string &r) {
      std::lock_guard<std::mutex> lock(m);
      seen.push_back(r);
      lost.push_back(rank);
      cv.notify_all();
    };
  }
  bool waitFor(size_t n, std::chrono::milliseconds within) {
    std::unique_lock<std::mutex> lock(m);
    return cv.wait_for(lock, within, [&] { return seen.size() >= n; });
  }
};

struct Three {
  std::vector<std::unique_ptr<PeerWatch>> watches;
  std::vector<PeerEndpoint> all = std::vector<PeerEndpoint>(3);
  Reports reports[3];
  Three() {
    for (int r = 0; r < 3; ++r) {
      std::string error;
      watches.push_back(PeerWatch::listen(all[r], error));
      EXPECT_TRUE(watches.back()) << error;
      EXPECT_NE(all[r].port, 0);
    }
    // Each "process" starts on its own thread, as they would in parallel.
    std::vector<std::thread> starts;
    for (int r = 0; r < 3; ++r)
      starts.emplace_back([this, r] {
        std::string error;
        EXPECT_TRUE(watches[r]->start(r, all, 10s, reports[r].sink(), error))
            << error;
      });
    for (std::thread &t : starts)
      t.join();
  }
};

TEST(PeerWatch, EveryProcessWatchesEveryOther) {
  Three t;
  EXPECT_EQ(t.watches[0]->watched(), (std::vector<int>{1, 2}));
  EXPECT_EQ(t.watches[1]->watched(), (std::vector<int>{0, 2}));
  EXPECT_EQ(t.watches[2]->watched(), (std::vector<int>{0, 1}));
}

TEST(PeerWatch, ADroppedPeerIsReportedByTheOthersAtOnce) {
  Three t;
  auto begin = std::chrono::steady_clock::now();
  t.watches[1]->dropForTest();
  ASSERT_TRUE(t.reports[0].waitFor(1, 5s));
  ASSERT_TRUE(t.reports[2].waitFor(1, 5s));
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - begin)
                       .count();
  EXPECT_LT(seconds, 2.0);
  std::string want = "process rank 1 on host " + std::string(t.all[1].host) +
                     " (pid " + std::to_string(getpid()) + ") died";
  EXPECT_EQ(t.reports[0].seen[0].find(want), 0u) << t.reports[0].seen[0];
  EXPECT_NE(t.reports[0].seen[0].find("its connection to rank 0 closed "
                                      "without a goodbye"),
            std::string::npos);
  EXPECT_NE(t.reports[2].seen[0].find("its connection to rank 2"),
            std::string::npos);
  EXPECT_EQ(t.reports[0].lost, std::vector<int>{1});
  EXPECT_EQ(t.reports[2].lost, std::vector<int>{1});
  std::printf("reported %.3f s after the drop\n", seconds);
}

// Recovery re-plans for the processes left: a survivor must learn every
// process lost, each once, not only the first.
TEST(PeerWatch, EveryLostPeerIsReportedOnce) {
  Three t;
  t.watches[1]->dropForTest();
  t.watches[2]->dropForTest();
  ASSERT_TRUE(t.reports[0].waitFor(2, 5s));
  // Heartbeats run every second: two of them add nothing.
  EXPECT_FALSE(t.reports[0].waitFor(3, 2500ms));
  std::vector<int> lost = t.reports[0].lost;
  std::sort(lost.begin(), lost.end());
  EXPECT_EQ(lost, (std::vector<int>{1, 2}));
}

TEST(PeerWatch, AnOrderlyEndIsNoDeath) {
  Three t;
  t.watches[2]->stop();
  t.watches[1]->stop();
  // Heartbeats run every second: two of them pass without a report.
  EXPECT_FALSE(t.reports[0].waitFor(1, 2500ms));
  EXPECT_TRUE(t.reports[0].seen.empty());
}

TEST(PeerWatch, ASilentPeerIsReportedWhenItsSilenceRunsOut) {
  // Rank 1 is a socket that accepts rank 0's connection and never sends.
  PeerEndpoint self;
  std::string error;
  auto watch = PeerWatch::listen(self, error);
  ASSERT_TRUE(watch) << error;
  int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(silent, reinterpret_cast<sockaddr *>(&addr), sizeof addr),
            0);
  ASSERT_EQ(::listen(silent, 4), 0);
  ASSERT_EQ(
      ::getsockname(silent, reinterpret_cast<sockaddr *>(&addr), &len), 0);
  PeerEndpoint quiet;
  std::snprintf(quiet.host, sizeof quiet.host, "quiet");
  std::snprintf(quiet.address, sizeof quiet.address, "127.0.0.1");
  quiet.port = ntohs(addr.sin_port);
  quiet.pid = 4242;
  Reports reports;
  ASSERT_TRUE(watch->start(0, {self, quiet}, 1500ms, reports.sink(), error))
      << error;
  int conn = ::accept(silent, nullptr, nullptr);
  ASSERT_GE(conn, 0);
  ASSERT_TRUE(reports.waitFor(1, 6s));
  EXPECT_EQ(reports.seen[0], "process rank 1 on host quiet (pid 4242) stopped "
                             "answering: no heartbeat for 1.5 s");
  watch.reset();
  ::close(conn);
  ::close(silent);
}

TEST(PeerWatch, APeerThatCannotBeReachedIsAnError) {
  PeerEndpoint self, nowhere;
  std::string error;
  auto watch = PeerWatch::listen(self, error);
  ASSERT_TRUE(watch) << error;
  std::snprintf(nowhere.address, sizeof nowhere.address, "127.0.0.1");
  nowhere.port = 1; // nothing listens there
  Reports reports;
  EXPECT_FALSE(watch->start(0, {self, nowhere}, 10s, reports.sink(), error));
  EXPECT_NE(error.find("connecting to rank 1 at 127.0.0.1:1"),
            std::string::npos)
      << error;
}

} // namespace
