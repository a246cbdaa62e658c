//===- StateStore.cpp - a job's state kept in memory, in a ring -----------===//

#include "lib/StateStore.h"

namespace whale {

HeldState &StateStore::prepare(const StateCollection &layout,
                               int64_t version) {
  if (version != version_) {
    *this = StateStore();
    version_ = version;
  }
  layout_ = layout;
  return own_;
}

void StateStore::commit(int64_t step) {
  const int64_t n = static_cast<int64_t>(layout_.ranks.size());
  for (const auto &[key, boxes] : own_) {
    HeldState &keeper = copyOfPrevious_[(key.first + 1) % n];
    for (const auto &[box, bytes] : boxes)
      keeper[key][box] = bytes; // same sizes: the buffer is reused
  }
  step_ = step;
}

bool StateStore::surviving(int64_t lost, StateCollection &layout,
                           HeldState &held, std::string &error) const {
  const int64_t n = static_cast<int64_t>(layout_.ranks.size());
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
        for (const auto &[box, bytes] : data)
          held[{keeper, key.second}][box] = bytes;
  return true;
}

} // namespace whale
