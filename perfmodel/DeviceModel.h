//===- DeviceModel.h - what a device can do, from its data sheet -*- C++
//-*-===//
//
// The planner, the balancer, the search and the simulator price an op
// from the one cost model (FLOPs and bytes, the dialect's cost interface)
// and a device model: peak matrix and vector
// rates, memory bandwidth and capacity, the cost of launching a kernel, and
// how many tiles of a GEMM run at once. GPUs we do not have are described by
// their data sheets, so a plan for them can be priced on any machine; a
// profile (ProfileDb) replaces these estimates where it has measured an op.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_PERFMODEL_DEVICEMODEL_H
#define WHALE_PERFMODEL_DEVICEMODEL_H

#include "perfmodel/OpCost.h"

#include <cstdint>
#include <string>
#include <vector>

namespace whale::perf {

/// The part of its memory's bandwidth a layout change moves bytes at (a
/// convolution's reorders into and out of oneDNN's blocked layouts, priced
/// by OpCost::passBytes): blocks transposed on the way, not a stream.
/// Measured on the 2-core EPYC VM (2026-12-07, ONEDNN_VERBOSE over a
/// ResNet-50 64 x 64 batch-8 step): oneDNN 2.6's reorders moved 11.0 GB/s
/// a thread (6.2 to 19.7 by layout) where `whale devices --probe`'s
/// streaming add moved 17.8 GB/s a thread.
constexpr double kLayoutPassShare = 11.0 / 17.8;

struct DeviceModel {
  std::string name; ///< "A100-80GB", or "cpu" for a described CPU device
  bool gpu = false;
  double matmulFlops = 0;     ///< fp32 GEMM peak, FLOP/s
  double matmulFlopsBf16 = 0; ///< bf16 inputs, fp32 accumulation, FLOP/s
  double vectorFlops = 0;     ///< fp32 elementwise peak, FLOP/s
  double memoryBandwidth = 0; ///< bytes/s of the device's own memory
  int64_t memoryBytes = 0;    ///< capacity; 0: no limit
  double launchSeconds = 0;   ///< fixed cost of one kernel (or op call)
  /// GEMM tiles in flight at once (SMs for a GPU, threads for a CPU) and
  /// the square tile edge: a product of fewer tiles, or of edges that do not
  /// fill a tile, leaves units idle (wave quantization).
  int parallelUnits = 1;
  int tile = 1;
  /// The links of a GPU's data sheet: to the GPUs of its node (NVLink or
  /// PCIe), bytes/s per direction; 0 where the sheet names none.
  double nodeLinkBandwidth = 0;
  /// Latency of a message to another device of the node when the cluster
  /// declares no link: NVLink's few microseconds, or for CPU devices in one
  /// process a hand-over between threads (a condition variable's wake-up).
  double nodeLinkLatency = 0;
  /// Where a profile of this very cluster timed this device apart from
  /// the others of its class, the key of its own times; empty: the times of
  /// its class. Devices of one model still differ in a run (a slower core,
  /// another tenant), and ranks that meet often wait for the slowest.
  std::string ownTimes;
};

/// The GPU models Whale knows by name: A100-40GB, A100-80GB, H100-SXM,
/// H200, V100, T4 (each with its data sheet's figures).
const std::vector<DeviceModel> &knownGpuModels();

/// The known model named `name` (case-insensitive; "H100" is "H100-SXM"),
/// or null.
const DeviceModel *findGpuModel(const std::string &name);

/// The names findGpuModel accepts, for error messages.
std::string knownGpuModelNames();

/// A CPU device of `threads` threads that reaches `flops` on GEMMs (the
/// planner's rate: declared, probed or nominal).
DeviceModel cpuModel(double flops, int threads, int64_t memoryBytes);

/// Seconds of one execution of an op on `device`: the slower of its
/// arithmetic (at the GEMM's achievable fraction of peak for matmuls) and
/// its memory traffic, plus the launch cost.
double opSeconds(const OpCost &cost, const DeviceModel &device);

/// The fraction of a device's matrix peak a GEMM of this shape reaches:
/// tiles over units in whole waves; edges that fill their tiles and depth
/// that outlasts loading them (a GPU's, and a CPU's direct kernels'); a
/// CPU BLAS's copies of the operands (cpuPackingUse) instead of those.
double gemmEfficiency(const OpCost &cost, const DeviceModel &device);

/// The part of a CPU GEMM's time spent multiplying rather than copying:
/// its BLAS packs each operand, and reads and writes the result, once per
/// product, at the device's memory bandwidth.
double cpuPackingUse(const OpCost &cost, const DeviceModel &device);

} // namespace whale::perf

#endif
