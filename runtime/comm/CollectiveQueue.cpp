//===- CollectiveQueue.cpp - collectives a rank runs while it computes ----===//

#include "runtime/comm/CollectiveQueue.h"
#include "runtime/comm/Communicator.h"
#include "runtime/core/CpuShare.h"

#include <algorithm>

namespace whale::rt {

CollectiveQueue::~CollectiveQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  changed.notify_all();
  if (worker.joinable())
    worker.join();
}

int64_t CollectiveQueue::start(std::vector<int> group, Work work) {
  std::lock_guard<std::mutex> lock(mutex);
  auto job = std::make_shared<Job>();
  job->id = nextId++;
  job->group = std::move(group);
  job->work = std::move(work);
  jobs.push_back(std::move(job));
  if (!worker.joinable())
    worker = std::thread([this] { run(); });
  changed.notify_all();
  return jobs.back()->id;
}

void CollectiveQueue::run() {
  setOnCollectiveThread(true);
  // Started by a rank's thread, under its device's share where it has one:
  // the collectives are not the device's compute.
  CpuShare::leaveInherited();
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    // The first job not yet run, in the order started.
    std::shared_ptr<Job> next;
    changed.wait(lock, [&] {
      auto it = std::find_if(jobs.begin(), jobs.end(),
                             [](const auto &j) { return !j->done; });
      next = it == jobs.end() ? nullptr : *it;
      return stopping || next;
    });
    if (stopping)
      return;
    lock.unlock();
    Status st = next->work();
    lock.lock();
    next->status = std::move(st);
    next->done = true;
    next->work = nullptr; // what it captured goes now
    changed.notify_all();
  }
}

Status CollectiveQueue::wait(int64_t id) {
  std::unique_lock<std::mutex> lock(mutex);
  auto it = std::find_if(jobs.begin(), jobs.end(),
                         [&](const auto &j) { return j->id == id; });
  if (it == jobs.end())
    return Status::invalid("wait: collective " + std::to_string(id) +
                           " was not started, or was waited for already");
  std::shared_ptr<Job> job = *it;
  changed.wait(lock, [&] { return job->done; });
  jobs.erase(std::find(jobs.begin(), jobs.end(), job));
  return job->status;
}

Status CollectiveQueue::settle(const std::vector<int> &group) {
  std::unique_lock<std::mutex> lock(mutex);
  std::vector<std::shared_ptr<Job>> over;
  for (const auto &j : jobs)
    if (j->group == group)
      over.push_back(j);
  for (const auto &j : over) {
    changed.wait(lock, [&] { return j->done; });
    if (!j->status)
      return j->status;
  }
  return Status::ok();
}

size_t CollectiveQueue::pending() const {
  std::lock_guard<std::mutex> lock(mutex);
  return jobs.size();
}

} // namespace whale::rt
