//===- GroupedKeys.h - grouped keys repeated for devices without ---*- C++
//-*-===//
//
// Grouped-query attention on a device whose attention kernels read one key
// head per query head: the key and value heads repeated, each kvGroup times
// in a row (transformers' repeat_kv), the device's own attention over
// them, and the repeated heads' gradients summed over each group. It holds
// a copy of k and v as wide as q; the CPU's kernels read the shared heads
// where they are instead (runtime/cpu/Attention.cpp), and are what this is
// tested against.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_OPS_GROUPEDKEYS_H
#define WHALE_RUNTIME_OPS_GROUPEDKEYS_H

#include "runtime/core/Device.h"

namespace whale::rt {

/// attention(q, k, v) with k and v's heads repeated to q's on `dev`.
Status attentionOverRepeatedKeys(Device &dev, View<const float> q,
                                 View<const float> k, View<const float> v,
                                 double scale, AttentionForm form,
                                 View<float> out);

/// Its gradient: dq as the repeated attention's, dk and dv its repeated
/// heads' gradients summed over each group.
Status attentionBackwardOverRepeatedKeys(
    Device &dev, View<const float> q, View<const float> k, View<const float> v,
    View<const float> out, View<const float> dout, double scale,
    AttentionForm form, View<float> dq, View<float> dk, View<float> dv);

} // namespace whale::rt

#endif
