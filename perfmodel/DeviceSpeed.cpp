//===- DeviceSpeed.cpp - how fast a cluster's device is, decided once -----===//

#include "perfmodel/DeviceSpeed.h"

#include <algorithm>
#include <string>

namespace whale::perf {

bool sameDevice(const DeviceDescription &a, const DeviceDescription &b) {
  return a.gpu == b.gpu && a.model == b.model && a.flops == b.flops &&
         a.threads == b.threads && a.memory == b.memory && a.sms == b.sms &&
         a.contexts == b.contexts && a.cpuShare == b.cpuShare &&
         a.memoryBandwidth == b.memoryBandwidth;
}

double smShare(const DeviceDescription &d) {
  if (!d.gpu)
    return 1;
  if (d.sms <= 0)
    return 1.0 / std::max(1, d.contexts);
  const DeviceModel *sheet = d.model.empty() ? nullptr : findGpuModel(d.model);
  const int total = sheet ? sheet->parallelUnits : kNominalGpuSms;
  return std::min(1.0, static_cast<double>(d.sms) / total);
}

double rateOf(const DeviceDescription &d) {
  if (d.flops > 0)
    return d.flops;
  // A CPU under a quota computes that part of the time.
  return d.gpu ? kNominalGpuFlops * smShare(d)
               : std::max(1, d.threads) * kNominalCoreFlops * d.cpuShare;
}

bool rateIsNominal(const DeviceDescription &d) { return !(d.flops > 0); }

namespace {

/// `m` on its share of the SMs: the memory bandwidth it draws scales with
/// them, an estimate (a partition reaches HBM through its own SMs' load
/// units, and until a profile of it says otherwise it is priced as moving
/// bytes at its share of the peak); its GEMMs' waves fill only its SMs; and
/// it has a name of its own, so a profile of the share times it apart
/// from the whole GPU.
void onShare(DeviceModel &m, const DeviceDescription &d, double share) {
  m.memoryBandwidth *= share;
  if (d.sms > 0) {
    m.parallelUnits = std::min(m.parallelUnits, d.sms);
    m.name += "@sms=" + std::to_string(d.sms);
  } else {
    m.parallelUnits = std::max(1, m.parallelUnits / std::max(1, d.contexts));
    m.name += "@contexts=" + std::to_string(d.contexts);
  }
}

} // namespace

static DeviceModel estimatedModelOf(const DeviceDescription &d) {
  const DeviceModel *sheet = d.model.empty() ? nullptr : findGpuModel(d.model);
  if (sheet) {
    DeviceModel m = *sheet;
    if (d.memory > 0)
      m.memoryBytes = d.memory;
    // A share of it: its arithmetic scales with its SMs too.
    if (const double share = smShare(d); share < 1) {
      m.matmulFlops *= share;
      m.matmulFlopsBf16 *= share;
      m.vectorFlops *= share;
      onShare(m, d, share);
    }
    return m;
  }
  const double rate = rateOf(d);
  if (!d.gpu) {
    // Its memory traffic runs only while its threads do.
    DeviceModel m = cpuModel(rate, d.threads, d.memory);
    m.memoryBandwidth *= d.cpuShare;
    return m;
  }
  // A GPU known only by its rate: priced as a GPU of that rate. The rate
  // is already its share's; its bandwidth and SMs follow the share.
  DeviceModel m = *findGpuModel("H100-SXM");
  m.name = "cuda";
  const double scale = rate / m.matmulFlops;
  m.matmulFlops *= scale;
  m.matmulFlopsBf16 *= scale;
  m.vectorFlops *= scale;
  m.memoryBytes = d.memory;
  if (const double share = smShare(d); share < 1)
    onShare(m, d, share);
  return m;
}

DeviceModel deviceModelOf(const DeviceDescription &d) {
  DeviceModel m = estimatedModelOf(d);
  // A measured bandwidth is already its share's.
  if (d.memoryBandwidth > 0)
    m.memoryBandwidth = d.memoryBandwidth;
  return m;
}

} // namespace whale::perf
