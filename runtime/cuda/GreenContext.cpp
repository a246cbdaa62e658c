//===- GreenContext.cpp - a device on a share of a GPU's SMs --------------===//
//
// The driver's green-context functions are found at run time
// (cudaGetDriverEntryPointByVersion): the plugin links the CUDA runtime
// statically and not the driver, and a driver older than 12.4 then says
// so when a share is asked for instead of failing to load the plugin.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/GreenContext.h"

#include "runtime/cuda/SmShare.h"

#include <map>
#include <mutex>
#include <vector>

namespace whale::rt::cuda {
namespace {

/// The driver functions a share needs.
struct Driver {
  decltype(&cuDeviceGet) deviceGet = nullptr;
  decltype(&cuDeviceGetDevResource) getResource = nullptr;
  decltype(&cuDevSmResourceSplitByCount) split = nullptr;
  decltype(&cuDevResourceGenerateDesc) describe = nullptr;
  decltype(&cuGreenCtxCreate) create = nullptr;
  decltype(&cuGreenCtxDestroy) destroy = nullptr;
  decltype(&cuGreenCtxStreamCreate) streamCreate = nullptr;
  decltype(&cuGetErrorString) errorString = nullptr;
  std::string missing; ///< the first function the driver lacks
};

template <class F>
void findDriverFunction(const char *symbol, F &fn, std::string &missing) {
  void *p = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  // 12.4: the first CUDA with green contexts.
  if (cudaGetDriverEntryPointByVersion(symbol, &p, 12040, cudaEnableDefault,
                                       &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || !p) {
    cudaGetLastError();
    if (missing.empty())
      missing = symbol;
    return;
  }
  fn = reinterpret_cast<F>(p);
}

const Driver &driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    findDriverFunction("cuDeviceGet", d.deviceGet, d.missing);
    findDriverFunction("cuDeviceGetDevResource", d.getResource, d.missing);
    findDriverFunction("cuDevSmResourceSplitByCount", d.split, d.missing);
    findDriverFunction("cuDevResourceGenerateDesc", d.describe, d.missing);
    findDriverFunction("cuGreenCtxCreate", d.create, d.missing);
    findDriverFunction("cuGreenCtxDestroy", d.destroy, d.missing);
    findDriverFunction("cuGreenCtxStreamCreate", d.streamCreate, d.missing);
    findDriverFunction("cuGetErrorString", d.errorString, d.missing);
  });
  return d;
}

Status failed(CUresult r, const std::string &what) {
  if (r == CUDA_SUCCESS)
    return Status::ok();
  const char *text = nullptr;
  if (driver().errorString)
    driver().errorString(r, &text);
  return Status::internal(what + ": " +
                          (text ? text : "CUDA error " + std::to_string(r)));
}

/// The SMs of each GPU not held by a share of this process: pieces the
/// shares were split from and gave back. A share is split off one piece,
/// and what is left of that piece stays free.
struct FreeSms {
  std::mutex mutex;
  std::map<int, std::vector<CUdevResource>> pieces; ///< by GPU
  std::map<int, int> total;                         ///< each GPU's SMs
};

FreeSms &freeSms() {
  static FreeSms f;
  return f;
}

} // namespace

Status GreenContext::open(const std::string &device, int ordinal, int sms,
                          std::unique_ptr<GreenContext> &out) {
  const Driver &d = driver();
  if (!d.missing.empty())
    return Status::invalid(device + ": a share of a GPU's SMs needs CUDA " +
                           "green contexts (a driver for CUDA 12.4 or " +
                           "later); this driver has no " + d.missing);
  CUdevice dev;
  if (Status st = failed(d.deviceGet(&dev, ordinal), device + ": cuDeviceGet");
      !st)
    return st;
  FreeSms &f = freeSms();
  std::lock_guard<std::mutex> lock(f.mutex);
  auto [at, first] = f.pieces.try_emplace(ordinal);
  std::vector<CUdevResource> &pieces = at->second;
  if (first) {
    CUdevResource all{};
    if (Status st = failed(d.getResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM),
                           device + ": cuDeviceGetDevResource");
        !st) {
      f.pieces.erase(at);
      return st;
    }
    pieces.push_back(all);
    f.total[ordinal] = static_cast<int>(all.sm.smCount);
  }
  // The smallest free piece that holds the share, so larger ones stay
  // whole for larger shares.
  CUdevResource *from = nullptr;
  int largest = 0;
  for (CUdevResource &p : pieces) {
    const int n = static_cast<int>(p.sm.smCount);
    largest = std::max(largest, n);
    if (n >= sms && (!from || n < static_cast<int>(from->sm.smCount)))
      from = &p;
  }
  SmResources r;
  r.total = f.total[ordinal];
  r.free = largest;
  const CUdevResource &shape = from ? *from : pieces.front();
  r.minimum = static_cast<int>(shape.sm.minSmPartitionSize);
  r.alignment = static_cast<int>(shape.sm.smCoscheduledAlignment);
  if (std::string why = smShareError(sms, r); !why.empty())
    return Status::invalid(device + ": " + why);

  std::unique_ptr<GreenContext> g(new GreenContext);
  g->device = device;
  g->ordinal = ordinal;
  unsigned groups = 1;
  CUdevResource rest{};
  if (Status st = failed(d.split(&g->held, &groups, from, &rest, 0,
                                 static_cast<unsigned>(sms)),
                         device + ": cuDevSmResourceSplitByCount");
      !st)
    return st;
  if (groups != 1 || static_cast<int>(g->held.sm.smCount) != sms)
    return Status::internal(device + ": asked the driver for " +
                            std::to_string(sms) + " SMs and got " +
                            std::to_string(groups ? g->held.sm.smCount : 0));
  CUdevResourceDesc desc = nullptr;
  if (Status st = failed(d.describe(&desc, &g->held, 1),
                         device + ": cuDevResourceGenerateDesc");
      !st)
    return st;
  if (Status st =
          failed(d.create(&g->context, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM),
                 device + ": cuGreenCtxCreate");
      !st)
    return st;
  // Held from here: the piece it came from keeps only the rest.
  if (rest.sm.smCount > 0)
    *from = rest;
  else
    pieces.erase(pieces.begin() + (from - pieces.data()));
  out = std::move(g);
  return Status::ok();
}

GreenContext::~GreenContext() {
  if (!context)
    return;
  driver().destroy(context);
  FreeSms &f = freeSms();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.pieces[ordinal].push_back(held);
}

Status GreenContext::newStream(cudaStream_t &out,
                               const std::string &what) const {
  CUstream s = nullptr;
  Status st = failed(driver().streamCreate(&s, context, CU_STREAM_NON_BLOCKING,
                                           /*priority=*/0),
                     device + ": " + what);
  if (st)
    out = reinterpret_cast<cudaStream_t>(s);
  return st;
}

} // namespace whale::rt::cuda
