//===- SharedDeviceGroup.cpp - collectives of ranks sharing one device ----===//

#include "runtime/comm/SharedDeviceGroup.h"

#include <algorithm>
#include <string>

namespace whale::rt {

namespace {

using BucketOp = Device::BucketOp;

/// Where each member's part begins.
std::vector<int64_t> offsetsOf(const std::vector<int64_t> &parts) {
  std::vector<int64_t> at(parts.size() + 1, 0);
  for (size_t k = 0; k < parts.size(); ++k)
    at[k + 1] = at[k] + parts[k];
  return at;
}

const char *nameOf(BucketOp op) {
  switch (op) {
  case BucketOp::AllReduce:
    return "all_reduce";
  case BucketOp::ReduceToOwners:
    return "reduce_to_owners";
  case BucketOp::GatherFromOwners:
    return "gather_from_owners";
  case BucketOp::AllToAll:
    return "all_to_all";
  }
  return "collective";
}

} // namespace

Status sharedDeviceJobs(BucketOp op, int position,
                        const std::vector<float *> &buckets,
                        const std::vector<int64_t> &parts,
                        std::vector<Device::MemberSum> &jobs) {
  const int size = static_cast<int>(buckets.size());
  const std::string where = std::string(nameOf(op)) + " on a shared device: ";
  if (size < 1 || size > Device::kMaxSharedMembers || position < 0 ||
      position >= size)
    return Status::invalid(where + "position " + std::to_string(position) +
                           " of " + std::to_string(size) +
                           " members (at most " +
                           std::to_string(Device::kMaxSharedMembers) + ")");
  const bool summed = op == BucketOp::AllReduce;
  if (parts.size() != (summed ? size_t(1) : size_t(size)) ||
      std::any_of(parts.begin(), parts.end(), [](int64_t p) { return p < 0; }))
    return Status::invalid(where + std::to_string(parts.size()) +
                           " parts for " + std::to_string(size) + " members");
  const std::vector<int64_t> at = offsetsOf(parts);
  const int64_t total = at.back();
  auto everyMember = [&](int64_t offset, auto &out) {
    for (float *b : buckets)
      out.push_back(b + offset);
  };
  jobs.clear();
  switch (op) {
  case BucketOp::AllReduce: {
    // The host communicator's slices: member p sums the p-th, for all.
    const int64_t chunk = (total + size - 1) / size;
    const int64_t from = std::min(total, position * chunk);
    const int64_t to = std::min(total, from + chunk);
    if (to == from)
      return Status::ok();
    Device::MemberSum job;
    everyMember(from, job.from);
    everyMember(from, job.to);
    job.count = to - from;
    jobs.push_back(std::move(job));
    return Status::ok();
  }
  case BucketOp::ReduceToOwners: {
    if (parts[position] == 0)
      return Status::ok();
    Device::MemberSum job;
    everyMember(at[position], job.from);
    job.to.push_back(buckets[position] + at[position]);
    job.count = parts[position];
    jobs.push_back(std::move(job));
    return Status::ok();
  }
  case BucketOp::GatherFromOwners:
    // Each other member's part from its owner into this bucket: no member
    // writes its own part, the one the others read.
    for (int k = 0; k < size; ++k)
      if (k != position && parts[k] > 0)
        jobs.push_back(
            {{buckets[k] + at[k]}, {buckets[position] + at[k]}, parts[k]});
    return Status::ok();
  case BucketOp::AllToAll:
    // Member k's part `position` into this bucket's second half at part k:
    // what NCCL's paired sends and receives deliver, which needs parts of
    // one size.
    if (std::adjacent_find(parts.begin(), parts.end(),
                           std::not_equal_to<int64_t>()) != parts.end())
      return Status::invalid(where + "parts of different sizes");
    for (int k = 0; k < size; ++k)
      if (parts[k] > 0)
        jobs.push_back({{buckets[k] + at[position]},
                        {buckets[position] + total + at[k]},
                        parts[k]});
    return Status::ok();
  }
  return Status::internal(where + "unknown operation");
}

Status sharedDeviceBucket(Device &device, BucketOp op, int position, int size,
                          float *data, const std::vector<int64_t> &parts,
                          const MemberExchange &exchange) {
  // Refused before the exchange, where every member refuses alike.
  std::vector<Device::MemberSum> jobs;
  if (Status st = sharedDeviceJobs(
          op, position, std::vector<float *>(std::max(size, 0), data), parts,
          jobs);
      !st)
    return st;
  std::vector<int64_t> all(2 * static_cast<size_t>(size));
  int64_t mine[2] = {static_cast<int64_t>(reinterpret_cast<intptr_t>(data)), 0};
  // 1. The bucket as packed, and where it is.
  if (Status st = device.markQueued(0, mine[1]); !st)
    return st;
  if (Status st = exchange(mine, 2, all.data()); !st)
    return st;
  std::vector<float *> buckets(size);
  for (int k = 0; k < size; ++k)
    buckets[k] = reinterpret_cast<float *>(static_cast<intptr_t>(all[2 * k]));
  if (Status st = sharedDeviceJobs(op, position, buckets, parts, jobs); !st)
    return st;
  // 2. This member's share, after every member's packing.
  for (int k = 0; k < size; ++k)
    if (k != position)
      if (Status st = device.waitMarker(all[2 * k + 1]); !st)
        return st;
  if (!jobs.empty())
    if (Status st = device.sumMembers(jobs); !st)
      return st;
  // 3. Every member's share done before this one goes on.
  int64_t done = 0;
  if (Status st = device.markQueued(1, done); !st)
    return st;
  if (Status st = exchange(&done, 1, all.data()); !st)
    return st;
  for (int k = 0; k < size; ++k)
    if (k != position)
      if (Status st = device.waitMarker(all[k]); !st)
        return st;
  return Status::ok();
}

} // namespace whale::rt
