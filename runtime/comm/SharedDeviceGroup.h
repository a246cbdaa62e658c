//===- SharedDeviceGroup.h - collectives of ranks sharing one device -*- C++
//-*-===//
//
// Ranks of one process on one GPU (two contexts of it, or shares of its
// SMs) cannot form an NCCL communicator: NCCL takes one rank per GPU. The
// host communicator would copy every bucket to the host and back. But such
// ranks see each other's memory, so they reduce in it:
//
//  1. Each member marks the work its device has queued (the bucket packed)
//     and tells the others where its bucket is and its marker, over the
//     host (a few bytes).
//  2. Each waits on the others' markers, then queues its share of the
//     work: for a sum, its 1/n slice of every member's bucket, added in
//     group order and written back to every member (the host
//     communicator's slices and order, so the bits are the same); for the
//     owners' collectives and the all-to-all, what lands in its own bucket.
//  3. Each marks that work and waits on the others' marks: no member goes
//     on (and reuses its bucket) before every member is done with it.
//
// The host waits only at the two exchanges; the devices' work stays in
// order by markers (events on a GPU), so nothing waits for a GPU to drain.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_COMM_SHAREDDEVICEGROUP_H
#define WHALE_RUNTIME_COMM_SHAREDDEVICEGROUP_H

#include "runtime/core/Device.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace whale::rt {

/// The members' exchange over the host: `count` values from each member
/// into `all`, member after member in group order.
using MemberExchange =
    std::function<Status(const int64_t *mine, int64_t count, int64_t *all)>;

/// `op` on the bucket at `data` (this member's device memory, laid out as
/// `parts`, as Device::bucketCollective takes it: one part for a sum, else
/// one per member) over a group of `size` members sharing `device`, this
/// one at `position`. Every member calls it with the same op and parts.
Status sharedDeviceBucket(Device &device, Device::BucketOp op, int position,
                          int size, float *data,
                          const std::vector<int64_t> &parts,
                          const MemberExchange &exchange);

/// The jobs of member `position` for `op`, given every member's bucket:
/// what step 2 above queues (exposed for its tests).
Status sharedDeviceJobs(Device::BucketOp op, int position,
                        const std::vector<float *> &buckets,
                        const std::vector<int64_t> &parts,
                        std::vector<Device::MemberSum> &jobs);

} // namespace whale::rt

#endif
