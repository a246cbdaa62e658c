//===- CpuShare.cpp - a CPU device slowed by the kernel, by a known factor ===//

#include "runtime/core/CpuShare.h"

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <signal.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace whale::rt {

namespace {

constexpr int64_t kPeriodMicros = 100000; // cpu.cfs_period_us: 100 ms

/// Where the cgroup v1 cpu controller is mounted.
const char *const kRoot = "/sys/fs/cgroup/cpu";

/// The cpu controller's cgroup of this process, as /proc/self/cgroup
/// names it ("N:cpu,cpuacct:/path" or "N:cpu:/path"); "" where none.
std::string ownCpuGroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos)
      continue;
    std::stringstream controllers(line.substr(a + 1, b - a - 1));
    std::string c;
    while (std::getline(controllers, c, ','))
      if (c == "cpu")
        return line.substr(b + 1);
  }
  return "";
}

bool writeFile(const std::string &path, const std::string &text,
               std::string &error) {
  std::ofstream out(path);
  out << text;
  out.flush();
  if (!out) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

pid_t threadId() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

/// Removes the groups of processes that died before they removed theirs
/// (whale-<pid>-<n> under `parent`; their threads are gone with them).
void removeStale(const std::string &parent) {
  DIR *d = ::opendir(parent.c_str());
  if (!d)
    return;
  while (dirent *e = ::readdir(d)) {
    int pid = 0, n = 0;
    if (std::sscanf(e->d_name, "whale-%d-%d", &pid, &n) == 2 && pid > 0 &&
        ::kill(pid, 0) != 0 && errno == ESRCH)
      ::rmdir((parent + "/" + e->d_name).c_str());
  }
  ::closedir(d);
}

std::atomic<int> opened{0};
/// The group the calling thread is in: a CpuShare's number, or -1 for the
/// process's own (numbers, not pointers: a group may close while a thread
/// it held lives on).
thread_local int current = -1;

/// The cgroup the process's threads start in.
const std::string &homeGroup() {
  static const std::string home = std::string(kRoot) + ownCpuGroup();
  return home;
}

} // namespace

std::unique_ptr<CpuShare> CpuShare::open(double share, int threads,
                                         std::string &error) {
  if (!(share > 0 && share <= 1)) {
    error = "share must be above 0 and at most 1";
    return nullptr;
  }
  struct stat st;
  if (::stat((std::string(kRoot) + "/cpu.cfs_quota_us").c_str(), &st) != 0) {
    error = "the kernel's CPU controller is not mounted at " +
            std::string(kRoot) +
            " (cgroup v1; a cgroup v2 hierarchy would need threaded groups, "
            "which Whale does not make yet)";
    return nullptr;
  }
  const std::string &home = homeGroup();
  removeStale(home);
  const int number = opened.fetch_add(1);
  const std::string dir = home + (home.back() == '/' ? "" : "/") + "whale-" +
                          std::to_string(::getpid()) + "-" +
                          std::to_string(number);
  if (::mkdir(dir.c_str(), 0755) != 0) {
    error = "cannot make the cgroup " + dir + ": " + std::strerror(errno);
    return nullptr;
  }
  const int64_t quota = std::max<int64_t>(
      1000, std::llround(share * std::max(1, threads) * kPeriodMicros));
  if (!writeFile(dir + "/cpu.cfs_period_us", std::to_string(kPeriodMicros),
                 error) ||
      !writeFile(dir + "/cpu.cfs_quota_us", std::to_string(quota), error)) {
    ::rmdir(dir.c_str());
    return nullptr;
  }
  return std::unique_ptr<CpuShare>(
      new CpuShare(dir, number, std::max(1, threads)));
}

std::string CpuShare::home() { return homeGroup(); }

double CpuShare::enforced() const {
  auto read = [&](const char *file) -> long long {
    std::ifstream in(dir + "/" + file);
    long long v = 0;
    return in >> v ? v : 0;
  };
  const long long quota = read("cpu.cfs_quota_us"),
                  period = read("cpu.cfs_period_us");
  if (quota < 0)
    return 1; // -1: no limit
  if (quota == 0 || period <= 0)
    return -1;
  return std::min(1.0, double(quota) / (double(period) * threads));
}

Status CpuShare::join(pid_t tid) {
  std::string error;
  if (!writeFile(dir + "/tasks", std::to_string(tid), error))
    return Status::internal(error);
  return Status::ok();
}

Status CpuShare::enter(CpuShare *share) {
  const int wanted = share ? share->number : -1;
  if (current == wanted)
    return Status::ok();
  if (share) {
    if (Status st = share->join(threadId()); !st)
      return st;
  } else {
    std::string error;
    if (!writeFile(homeGroup() + "/tasks", std::to_string(threadId()), error))
      return Status::internal(error);
  }
  current = wanted;
  return Status::ok();
}

void CpuShare::leaveInherited() {
  // No group opened in this process: none to have inherited.
  if (opened.load() == 0)
    return;
  std::string error;
  if (writeFile(homeGroup() + "/tasks", std::to_string(threadId()), error))
    current = -1;
}

CpuShare::~CpuShare() {
  // Threads still in the group (a driver that lives on) go home first: a
  // group with tasks cannot be removed. Ones that ended are gone already;
  // the group's own list says which are left.
  std::string ignored;
  std::ifstream tasks(dir + "/tasks");
  for (pid_t tid; tasks >> tid;)
    writeFile(homeGroup() + "/tasks", std::to_string(tid), ignored);
  if (current == number)
    current = -1;
  ::rmdir(dir.c_str());
}

} // namespace whale::rt
