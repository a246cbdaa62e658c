//===- PeerWatch.cpp - processes notice a peer process that died ---------===//
//
// The wire: the connecting (lower) rank first sends its rank as 4 bytes;
// then either side sends 'H' (a heartbeat) every second and 'B' (goodbye)
// before it closes. Anything else read is ignored.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/PeerWatch.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include <atomic>
#include <map>

namespace whale::rt {

namespace {

using Clock = std::chrono::steady_clock;

std::string errnoText(const char *what) {
  return std::string(what) + ": " + std::strerror(errno);
}

/// An IPv4 address of an interface that is up and not the loopback, so
/// peers on other machines can reach it; the loopback when there is none.
std::string reachableAddress() {
  std::string out = "127.0.0.1";
  ifaddrs *list = nullptr;
  if (getifaddrs(&list) != 0)
    return out;
  for (ifaddrs *i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
      continue;
    auto *in = reinterpret_cast<sockaddr_in *>(i->ifa_addr);
    if (ntohl(in->sin_addr.s_addr) >> 24 == 127)
      continue;
    char text[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof text)) {
      out = text;
      break;
    }
  }
  freeifaddrs(list);
  return out;
}

void copyText(char *dst, size_t size, const std::string &src) {
  std::strncpy(dst, src.c_str(), size - 1);
  dst[size - 1] = '\0';
}

bool sendAll(int fd, const void *data, size_t n) {
  const char *p = static_cast<const char *>(data);
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

/// Reads exactly n bytes before `deadline`.
bool recvAll(int fd, void *data, size_t n, Clock::time_point deadline) {
  char *p = static_cast<char *>(data);
  while (n > 0) {
    int left = static_cast<int>(std::chrono::duration_cast<
                                    std::chrono::milliseconds>(deadline -
                                                               Clock::now())
                                    .count());
    if (left <= 0)
      return false;
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, left) <= 0)
      continue;
    ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

/// Closes the connections a failed start made, saying goodbye first: a
/// peer whose own start succeeded must not take them for a death.
void giveUp(std::map<int, int> &fdOf) {
  for (auto &[peer, fd] : fdOf) {
    sendAll(fd, "B", 1);
    ::close(fd);
  }
  fdOf.clear();
}

} // namespace

struct PeerWatch::Impl {
  int listener = -1;
  int wake[2] = {-1, -1}; ///< the thread's stop signal
  PeerEndpoint self;
  int rank = 0;
  std::vector<PeerEndpoint> all;
  struct Peer {
    int rank = 0, fd = -1;
    Clock::time_point heard;
    bool gone = false; ///< said goodbye, or reported
  };
  std::vector<Peer> peers;
  std::chrono::milliseconds silence{30000};
  std::function<void(int, const std::string &)> onDeath;
  std::thread thread;
  std::atomic<bool> sayGoodbye{true};

  std::string describe(int r) const {
    const PeerEndpoint &e = all[static_cast<size_t>(r)];
    return "process rank " + std::to_string(r) + " on host " + e.host +
           " (pid " + std::to_string(e.pid) + ")";
  }

  /// Once per peer: its `gone` is set with it.
  void report(int lost, const std::string &what) {
    if (onDeath)
      onDeath(lost, what);
  }

  void run() {
    const auto beat = std::chrono::milliseconds(1000);
    Clock::time_point nextBeat = Clock::now();
    for (;;) {
      Clock::time_point now = Clock::now();
      if (now >= nextBeat) {
        for (Peer &p : peers)
          if (!p.gone)
            sendAll(p.fd, "H", 1); // a dead peer shows on the read side
        nextBeat = now + beat;
      }
      std::vector<pollfd> fds;
      fds.push_back({wake[0], POLLIN, 0});
      std::vector<Peer *> order;
      for (Peer &p : peers)
        if (!p.gone) {
          fds.push_back({p.fd, POLLIN, 0});
          order.push_back(&p);
        }
      int wait = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(nextBeat -
                                                                Clock::now())
              .count());
      int n = ::poll(fds.data(), fds.size(), wait < 0 ? 0 : wait);
      if (n < 0 && errno != EINTR)
        return;
      if (fds[0].revents)
        return; // stop
      now = Clock::now();
      for (size_t i = 1; i < fds.size(); ++i) {
        Peer &p = *order[i - 1];
        if (fds[i].revents) {
          char buf[256];
          ssize_t k = ::recv(p.fd, buf, sizeof buf, MSG_DONTWAIT);
          if (k < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
          if (k > 0) {
            p.heard = now;
            if (std::memchr(buf, 'B', static_cast<size_t>(k)))
              p.gone = true; // an orderly end
            continue;
          }
          p.gone = true;
          report(p.rank, describe(p.rank) + " died: its connection to rank " +
                 std::to_string(rank) + " closed without a goodbye");
          continue;
        }
        if (now - p.heard > silence) {
          p.gone = true;
          char secs[32];
          std::snprintf(secs, sizeof secs, "%g", silence.count() / 1000.0);
          report(p.rank, describe(p.rank) + " stopped answering: no heartbeat for " +
                 secs + " s");
        }
      }
    }
  }

  void closeAll() {
    for (Peer &p : peers)
      if (p.fd >= 0) {
        ::close(p.fd);
        p.fd = -1;
      }
    for (int *fd : {&listener, &wake[0], &wake[1]})
      if (*fd >= 0) {
        ::close(*fd);
        *fd = -1;
      }
  }

  void halt(bool goodbye) {
    if (thread.joinable()) {
      char c = 's';
      ssize_t ignored = ::write(wake[1], &c, 1);
      (void)ignored;
      thread.join();
    }
    if (goodbye)
      for (Peer &p : peers)
        if (p.fd >= 0 && !p.gone)
          sendAll(p.fd, "B", 1);
    closeAll();
  }
};

PeerWatch::PeerWatch(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}

PeerWatch::~PeerWatch() { stop(); }

std::unique_ptr<PeerWatch> PeerWatch::listen(PeerEndpoint &self,
                                             std::string &error) {
  auto impl = std::make_unique<Impl>();
  impl->listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (impl->listener < 0) {
    error = errnoText("socket");
    return nullptr;
  }
  int one = 1;
  ::setsockopt(impl->listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(impl->listener, reinterpret_cast<sockaddr *>(&addr), sizeof addr) !=
          0 ||
      ::listen(impl->listener, 256) != 0 ||
      ::getsockname(impl->listener, reinterpret_cast<sockaddr *>(&addr),
                    &len) != 0) {
    error = errnoText("listening for peers");
    impl->closeAll();
    return nullptr;
  }
  if (::pipe2(impl->wake, O_CLOEXEC) != 0) {
    error = errnoText("pipe");
    impl->closeAll();
    return nullptr;
  }
  char host[64] = "unknown";
  ::gethostname(host, sizeof host - 1);
  copyText(self.host, sizeof self.host, host);
  copyText(self.address, sizeof self.address, reachableAddress());
  self.port = ntohs(addr.sin_port);
  self.pid = static_cast<int32_t>(::getpid());
  impl->self = self;
  return std::unique_ptr<PeerWatch>(new PeerWatch(std::move(impl)));
}

bool PeerWatch::start(int rank, const std::vector<PeerEndpoint> &all,
                      std::chrono::milliseconds silence,
                      std::function<void(int, const std::string &)> onDeath,
                      std::string &error) {
  Impl &m = *impl;
  const int n = static_cast<int>(all.size());
  m.rank = rank;
  m.all = all;
  m.silence = silence;
  m.onDeath = std::move(onDeath);
  std::vector<int> ranks;
  if (n <= kMeshLimit) {
    for (int r = 0; r < n; ++r)
      if (r != rank)
        ranks.push_back(r);
  } else {
    for (int r : {(rank + n - 1) % n, (rank + 1) % n})
      if (r != rank && (ranks.empty() || ranks.back() != r))
        ranks.push_back(r);
  }
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(60);
  // Connect to the higher ranks (their listen queues take us before they
  // accept), then accept the lower ones: no order can deadlock.
  std::map<int, int> fdOf;
  int lower = 0;
  for (int r : ranks) {
    if (r < rank) {
      ++lower;
      continue;
    }
    const PeerEndpoint &e = all[static_cast<size_t>(r)];
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(e.port);
    if (fd < 0 || ::inet_pton(AF_INET, e.address, &addr.sin_addr) != 1 ||
        ::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
      error = errnoText(("connecting to rank " + std::to_string(r) + " at " +
                         e.address + ":" + std::to_string(e.port))
                            .c_str());
      if (fd >= 0)
        ::close(fd);
      giveUp(fdOf);
      return false;
    }
    int32_t me = rank;
    sendAll(fd, &me, sizeof me);
    fdOf[r] = fd;
  }
  while (lower > 0) {
    pollfd pfd{m.listener, POLLIN, 0};
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                              Clock::now())
            .count());
    int fd = -1;
    int32_t who = -1;
    if (left <= 0 || ::poll(&pfd, 1, left) <= 0 ||
        (fd = ::accept4(m.listener, nullptr, nullptr, SOCK_CLOEXEC)) < 0 ||
        !recvAll(fd, &who, sizeof who, deadline) || who < 0 || who >= rank ||
        fdOf.count(who)) {
      if (fd >= 0)
        ::close(fd);
      if (left <= 0 || Clock::now() >= deadline) {
        error = "the lower-ranked processes did not connect within 60 s";
        giveUp(fdOf);
        return false;
      }
      continue;
    }
    fdOf[who] = fd;
    --lower;
  }
  for (auto &[r, fd] : fdOf) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    m.peers.push_back({r, fd, Clock::now(), false});
  }
  m.thread = std::thread([this] { impl->run(); });
  return true;
}

void PeerWatch::stop() {
  if (impl)
    impl->halt(/*goodbye=*/true);
}

void PeerWatch::dropForTest() { impl->halt(/*goodbye=*/false); }

std::vector<int> PeerWatch::watched() const {
  std::vector<int> out;
  for (const Impl::Peer &p : impl->peers)
    out.push_back(p.rank);
  return out;
}

} // namespace whale::rt
