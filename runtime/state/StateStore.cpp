//===- StateStore.cpp - a job's state kept in memory, in a ring -----------===//

#include "runtime/state/StateStore.h"

#include "runtime/store/Crc32c.h"

#include <chrono>

namespace whale {

namespace {
uint32_t checksum(const std::vector<uint8_t> &bytes) {
  return rt::crc32c(bytes.data(), bytes.size());
}
} // namespace

HeldState &StateStore::prepare(const StateCollection &layout,
                               int64_t version) {
  wait();
  if (version != version_) {
    step_ = -1;
    own_.clear();
    copyOfPrevious_.clear();
    copyCrc_.clear();
    version_ = version;
  }
  layout_ = layout;
  return own_;
}

void StateStore::copyToKeepers() {
  auto t0 = std::chrono::steady_clock::now();
  const int64_t n = static_cast<int64_t>(layout_.ranks.size());
  for (const auto &[key, boxes] : own_) {
    HeldState &keeper = copyOfPrevious_[(key.first + 1) % n];
    for (const auto &[box, bytes] : boxes) {
      keeper[key][box] = bytes; // same sizes: the buffer is reused
      copyCrc_[{key.first, key.second, box}] = checksum(bytes);
    }
  }
  copySeconds_ = std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - t0)
                     .count();
  copiedSeconds_ += copySeconds_;
}

void StateStore::commit(int64_t step, bool background) {
  wait();
  // The step the copies are of: nothing reads them before wait().
  step_ = step;
  if (background)
    copier_ = std::thread([this] { copyToKeepers(); });
  else
    copyToKeepers();
}

double StateStore::wait() {
  if (copier_.joinable())
    copier_.join();
  return copySeconds_;
}

bool StateStore::surviving(int64_t lost, StateCollection &layout,
                           HeldState &held, std::string &error) {
  wait();
  const int64_t n = static_cast<int64_t>(layout_.ranks.size());
  // A worker the store's plan does not have joined after its last update
  // (an elastic change added it): it held none of that state, which is
  // whole without it.
  if (step_ >= 0 && n >= 1 && lost >= n) {
    layout = layout_;
    held = own_;
    return true;
  }
  if (step_ < 0 || n < 2 || lost < 0 || lost >= n) {
    error = "no other worker holds a copy of its state";
    return false;
  }
  const int64_t keeper = (lost + 1) % n;
  auto copies = copyOfPrevious_.find(keeper);
  layout = layout_;
  held.clear();
  for (StateTensor &t : layout.tensors)
    for (auto &[rank, box] : t.holders)
      if (rank == lost)
        rank = keeper;
  for (const auto &[key, data] : own_)
    if (key.first != lost)
      held[key] = data;
  if (copies != copyOfPrevious_.end())
    for (const auto &[key, data] : copies->second)
      if (key.first == lost)
        for (const auto &[box, bytes] : data) {
          auto crc = copyCrc_.find({key.first, key.second, box});
          if (crc == copyCrc_.end() || crc->second != checksum(bytes)) {
            error = "the copy of worker " + std::to_string(lost) +
                    "'s state kept by worker " + std::to_string(keeper) +
                    " is damaged (" + key.second + " " + box.str() +
                    " does not match its checksum)";
            held.clear();
            return false;
          }
          held[{keeper, key.second}][box] = bytes;
        }
  return true;
}

HeldState &StateStore::pendingOwn(const StateCollection &layout,
                                  int64_t version) {
  wait();
  // The older update's buffers, where they have the same sizes.
  pending_ = std::move(older_);
  older_ = Generation();
  if (pending_.version != version) {
    pending_.own.clear();
    pending_.copy.clear();
  }
  pending_.step = -1;
  pending_.version = version;
  pending_.layout = layout;
  pending_.copyCrc.clear();
  return pending_.own;
}

HeldState &StateStore::pendingCopy() { return pending_.copy; }

void StateStore::commitPending(int64_t step) {
  wait();
  pending_.step = step;
  older_ = std::move(latest_);
  latest_ = std::move(pending_);
  pending_ = Generation();
  step_ = step;
  layout_ = latest_.layout;
  copier_ = std::thread([this] {
    auto t0 = std::chrono::steady_clock::now();
    for (const auto &[key, boxes] : latest_.copy)
      for (const auto &[box, bytes] : boxes)
        latest_.copyCrc[{key.first, key.second, box}] = checksum(bytes);
    copySeconds_ = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - t0)
                       .count();
    copiedSeconds_ += copySeconds_;
  });
}

void StateStore::dropPending() {
  wait();
  pending_ = Generation();
}

std::vector<int64_t> StateStore::stepsHeld() {
  wait();
  return {latest_.step, older_.step};
}

bool StateStore::takeSurviving(const std::set<int64_t> &lost, int64_t step,
                               StateCollection &layout, HeldState &held,
                               std::string &error) {
  wait();
  Generation *g = step < 0                 ? nullptr
                  : latest_.step == step ? &latest_
                  : older_.step == step  ? &older_
                                         : nullptr;
  if (!g) {
    error = "no copy of the state after step " + std::to_string(step) +
            " is kept in memory here";
    return false;
  }
  layout = g->layout;
  held = std::move(g->own);
  for (auto &[key, data] : g->copy) {
    if (!lost.count(key.first))
      continue;
    for (auto &[box, bytes] : data) {
      auto crc = g->copyCrc.find({key.first, key.second, box});
      if (crc == g->copyCrc.end() || crc->second != checksum(bytes)) {
        error = "the copy of rank " + std::to_string(key.first) +
                "'s state kept by this process is damaged (" + key.second +
                " " + box.str() + " does not match its checksum)";
        held.clear();
        return false;
      }
    }
    held[key] = std::move(data);
  }
  latest_ = older_ = pending_ = Generation();
  step_ = -1;
  return true;
}

void StateStore::damageCopyOf(int64_t worker) {
  wait();
  const int64_t n = static_cast<int64_t>(layout_.ranks.size());
  for (auto &[key, data] : copyOfPrevious_[(worker + 1) % n])
    if (key.first == worker)
      for (auto &[box, bytes] : data)
        if (!bytes.empty()) {
          bytes[0] ^= 1;
          return;
        }
}

void StateStore::damageCopyFromAnotherProcess() {
  wait();
  for (auto &[key, data] : latest_.copy)
    for (auto &[box, bytes] : data)
      if (!bytes.empty()) {
        bytes[0] ^= 1;
        return;
      }
}

} // namespace whale
