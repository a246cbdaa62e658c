//===- DeviceModel.cpp - data sheets and the roofline of one op -----------===//

#include "perfmodel/DeviceModel.h"
#include "perfmodel/AttentionCost.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace whale::perf {
namespace {

constexpr double T = 1e12, G = 1e9;
constexpr int64_t GiB = int64_t(1) << 30;

/// One GPU of a data sheet. V100 and T4 have no bf16: their fp16 tensor
/// rate stands in for it (amp on them would run in fp16). Link figures are
/// per direction (NVLink's data-sheet totals count both).
DeviceModel gpu(const char *name, double fp32, double bf16, double bandwidth,
                int64_t memory, int sms, double link) {
  DeviceModel d;
  d.name = name;
  d.gpu = true;
  d.matmulFlops = fp32;
  d.matmulFlopsBf16 = bf16;
  d.vectorFlops = fp32;
  d.memoryBandwidth = bandwidth;
  d.memoryBytes = memory;
  // A kernel launch and its tail on the stream: a few microseconds.
  d.launchSeconds = 4e-6;
  d.parallelUnits = sms;
  d.tile = 128; // cuBLAS's usual tensor-core tile edge
  d.nodeLinkBandwidth = link;
  d.nodeLinkLatency = 3e-6;
  return d;
}

std::string lower(std::string s) {
  for (char &c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

} // namespace

const std::vector<DeviceModel> &knownGpuModels() {
  static const std::vector<DeviceModel> models = {
      // NVIDIA A100 (SXM4): 19.5 TFLOP/s fp32, 312 bf16 tensor, 108 SMs,
      // NVLink 3 600 GB/s both ways; 1,555 GB/s (40GB) or 2,039 (80GB).
      gpu("A100-40GB", 19.5 * T, 312 * T, 1555 * G, 40 * GiB, 108, 300 * G),
      gpu("A100-80GB", 19.5 * T, 312 * T, 2039 * G, 80 * GiB, 108, 300 * G),
      // H100 SXM5: 67 fp32, 989 bf16 dense, 3.35 TB/s, 132 SMs, NVLink 4
      // 900 GB/s both ways. H200: the same chip with 141 GB at 4.8 TB/s.
      gpu("H100-SXM", 67 * T, 989 * T, 3350 * G, 80 * GiB, 132, 450 * G),
      gpu("H200", 67 * T, 989 * T, 4800 * G, 141 * int64_t(1e9), 132, 450 * G),
      // V100 SXM2 32GB: 15.7 fp32, 125 fp16 tensor, 900 GB/s, 80 SMs,
      // NVLink 2 300 GB/s both ways.
      gpu("V100", 15.7 * T, 125 * T, 900 * G, 32 * GiB, 80, 150 * G),
      // T4: 8.1 fp32, 65 fp16 tensor, 320 GB/s, 40 SMs, PCIe 3 x16.
      gpu("T4", 8.1 * T, 65 * T, 320 * G, 16 * GiB, 40, 16 * G),
  };
  return models;
}

const DeviceModel *findGpuModel(const std::string &name) {
  std::string want = lower(name);
  if (want == "h100")
    want = "h100-sxm";
  if (want == "a100")
    want = "a100-80gb";
  for (const DeviceModel &m : knownGpuModels())
    if (lower(m.name) == want)
      return &m;
  return nullptr;
}

std::string knownGpuModelNames() {
  std::string s;
  for (const DeviceModel &m : knownGpuModels())
    s += (s.empty() ? "" : ", ") + m.name;
  return s;
}

DeviceModel cpuModel(double flops, int threads, int64_t memoryBytes) {
  DeviceModel d;
  d.name = "cpu";
  d.matmulFlops = flops;
  d.matmulFlopsBf16 = flops; // rounded to bf16, multiplied in fp32
  // Elementwise kernels run a few lanes per thread where GEMMs fill every
  // FMA unit: a quarter of the GEMM rate, until a profile says otherwise.
  d.vectorFlops = flops / 4;
  // A core streams about 8 GB/s from DRAM.
  d.memoryBandwidth = 8 * G * std::max(1, threads);
  d.memoryBytes = memoryBytes;
  d.launchSeconds = 1e-6; // a runtime call and its argument checks
  d.nodeLinkLatency = 5e-6;
  d.parallelUnits = std::max(1, threads);
  d.tile = 64;
  return d;
}

double cpuPackingUse(const OpCost &c, const DeviceModel &d) {
  if (!(d.matmulFlops > 0) || !(d.memoryBandwidth > 0) || c.m <= 0 ||
      c.n <= 0 || c.k <= 0)
    return 1;
  // A CPU BLAS (Goto's algorithm, as OpenBLAS runs it) copies B into
  // packed panels that every row of A reuses, A into blocks that every
  // column of B reuses, and reads and writes C around the depth it sums.
  // Each element so copied moves about 8 bytes (read and written) at the
  // device's memory bandwidth, where the multiply-adds of one row, column
  // or depth step that reuse it are 2 flops each at its GEMM rate: the
  // copies cost packRows / m + packRows / n + packRows / k of the
  // arithmetic. Measured (bench/GemmSweep.cpp, one thread of the 2-core
  // EPYC VM, 2026-12-07, 93 GFLOP/s and 23 GB/s probed: packRows about
  // 17): a 96-row product ran at 0.80 of a 1,024-cube one (this model:
  // 0.87), a 96-deep one at 0.89 (0.87), where tiles of 64 with a depth
  // term, a GPU's, gave 0.75 and 0.64.
  const double packRows = 4 * d.matmulFlops / d.memoryBandwidth;
  return 1 / (1 + packRows * (1.0 / double(c.m) + 1.0 / double(c.n) +
                              1.0 / double(c.k)));
}

double gemmEfficiency(const OpCost &c, const DeviceModel &d) {
  if (!c.matmul || c.m <= 0 || c.n <= 0 || c.k <= 0)
    return 1;
  const double tile = std::max(1, d.tile);
  const double tilesM = std::ceil(c.m / tile), tilesN = std::ceil(c.n / tile);
  const double tiles = std::max<int64_t>(1, c.batch) * tilesM * tilesN;
  const double units = std::max(1, d.parallelUnits);
  const double waves = std::ceil(tiles / units);
  const double waveUse = tiles / (waves * units);
  // A CPU BLAS's product loses its copies of the operands; a direct
  // kernel's (oneDNN's convolutions, on blocked layouts) makes none, and
  // loses, like a GPU's, its tiles' edges and their loads and stores.
  if (!d.gpu && !c.direct)
    return std::max(1e-3, waveUse * cpuPackingUse(c, d));
  const double edgeUse = (c.m / (tilesM * tile)) * (c.n / (tilesN * tile));
  // Each tile loads and stores its edges once whatever K is: a short K
  // spends a larger share of the tile's time outside the multiply-adds.
  const double depthUse = c.k / (c.k + tile);
  return std::max(1e-3, waveUse * edgeUse * depthUse);
}

double opSeconds(const OpCost &c, const DeviceModel &d) {
  if (d.gpu && c.attention.heads > 0) // its kernels, as the runtime runs it
    return gpuAttentionSeconds(c, d);
  double rate = c.matmul ? (c.bf16 ? d.matmulFlopsBf16 : d.matmulFlops) *
                               gemmEfficiency(c, d)
                         : d.vectorFlops;
  double arithmetic = c.flops > 0 && rate > 0 ? c.flops / rate : 0;
  double traffic =
      c.bytes > 0 && d.memoryBandwidth > 0 ? c.bytes / d.memoryBandwidth : 0;
  double passes = c.passBytes > 0 && d.memoryBandwidth > 0
                      ? c.passBytes / (d.memoryBandwidth * kLayoutPassShare)
                      : 0;
  return d.launchSeconds + std::max(arithmetic, traffic) + passes;
}

} // namespace whale::perf
