//===- DevicePlugin.cpp - devices by name, GPUs through a plugin ----------===//

#include "runtime/core/DevicePlugin.h"

#include "runtime/cpu/CpuDevice.h"
#include "runtime/cuda/DevicePluginAbi.h"
#include "runtime/cuda/SmShare.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace whale::rt {

namespace {

struct CudaPlugin {
  whale_cuda_device_count_fn deviceCount = nullptr;
  whale_cuda_open_device_fn openDevice = nullptr;
  std::string error; ///< why the plugin is not there, when it is not
};

std::string executableDir() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0)
    return ".";
  std::string p(path, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

/// Where the plugin may be: $WHALE_CUDA_PLUGIN, where this build put it,
/// then beside the program and in its ../lib (an installed tree).
std::vector<std::string> pluginCandidates() {
  std::vector<std::string> paths;
  if (const char *env = std::getenv("WHALE_CUDA_PLUGIN"))
    paths.push_back(env);
#ifdef WHALE_CUDA_PLUGIN_PATH
  paths.push_back(WHALE_CUDA_PLUGIN_PATH);
#endif
  std::string dir = executableDir();
  paths.push_back(dir + "/libwhale_cuda.so");
  paths.push_back(dir + "/../lib/libwhale_cuda.so");
  return paths;
}

CudaPlugin loadPlugin() {
  CudaPlugin plugin;
  // The driver first: without it the plugin's CUDA libraries would load
  // but every call would fail, and a machine with no GPU should not have
  // to carry them at all.
  if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    const char *why = dlerror();
    plugin.error = std::string("this machine has no NVIDIA driver (") +
                   (why ? why : "libcuda.so.1 not found") +
                   "); cuda devices need a GPU and its driver, use cpu:N here";
    return plugin;
  }
  std::string tried;
  for (const std::string &path : pluginCandidates()) {
    if (access(path.c_str(), R_OK) != 0) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      plugin.error = "cannot load the CUDA backend " + path + ": " +
                     (why ? why : "unknown error");
      return plugin;
    }
    plugin.deviceCount = reinterpret_cast<whale_cuda_device_count_fn>(
        dlsym(handle, "whale_cuda_device_count"));
    plugin.openDevice = reinterpret_cast<whale_cuda_open_device_fn>(
        dlsym(handle, "whale_cuda_open_device"));
    if (!plugin.deviceCount || !plugin.openDevice)
      plugin.error = path + " is not a whale CUDA backend (its entry points "
                            "are missing)";
    return plugin;
  }
  plugin.error = "this build has no CUDA backend (libwhale_cuda.so, built "
                 "where nvcc is found; looked at " +
                 tried + ")";
  return plugin;
}

const CudaPlugin &cudaPlugin() {
  static std::once_flag once;
  static CudaPlugin plugin;
  std::call_once(once, [] { plugin = loadPlugin(); });
  return plugin;
}

Status checkCuda(const std::string &name, const cuda::CudaName &gpu) {
  if (gpu.ordinal < 0)
    return Status::invalid("'" + name +
                           "': expected cuda:N, N the GPU's number from 0");
  if (gpu.sms < 0)
    return Status::invalid("'" + name +
                           "': expected cuda:N@sms=K, K the SMs it may use");
  const CudaPlugin &plugin = cudaPlugin();
  if (!plugin.deviceCount)
    return Status::invalid("'" + name + "': " + plugin.error);
  char why[512] = "";
  int count = plugin.deviceCount(why, sizeof why);
  if (count < 0)
    return Status::invalid("'" + name +
                           "': the CUDA driver found no usable "
                           "GPU (" +
                           why + ")");
  if (gpu.ordinal >= count)
    return Status::invalid("'" + name + "': this machine has " +
                           std::to_string(count) + " GPU" +
                           (count == 1 ? "" : "s"));
  return Status::ok();
}

} // namespace

Status checkDevice(const std::string &name) {
  cuda::CudaName gpu;
  if (cuda::parseCudaName(name, gpu))
    return checkCuda(name, gpu);
  return Status::ok();
}

Status openDevice(const std::string &name, int threads, int64_t memoryLimit,
                  std::unique_ptr<Device> &out) {
  cuda::CudaName gpu;
  if (!cuda::parseCudaName(name, gpu)) {
    CpuDeviceOptions options{std::max(1, threads),
                             std::max<int64_t>(0, memoryLimit), nullptr};
    // cpu:N@share=S: the kernel's quota on its threads (core/CpuShare.h).
    if (const size_t at = name.find("@share="); at != std::string::npos) {
      const std::string text = name.substr(at + 7);
      char *end = nullptr;
      const double share = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !(share > 0 && share <= 1))
        return Status::invalid("'" + name +
                               "': share must be a number above 0 and at "
                               "most 1, the part of each of its threads' "
                               "cores it may use");
      std::string why;
      options.share = CpuShare::open(share, options.threads, why);
      if (!options.share)
        return Status::invalid("'" + name + "': " + why);
    }
    auto cpu = std::make_unique<CpuDevice>(name, std::move(options));
    if (Status st = cpu->joinShare(); !st)
      return Status::invalid("'" + name + "': " + st.message());
    out = std::move(cpu);
    return Status::ok();
  }
  if (Status st = checkCuda(name, gpu); !st)
    return st;
  char why[512] = "";
  Device *dev = cudaPlugin().openDevice(name.c_str(), gpu.ordinal, gpu.sms,
                                        std::max<int64_t>(0, memoryLimit), why,
                                        sizeof why);
  if (!dev)
    return Status::invalid("'" + name + "': " + why);
  out.reset(dev);
  return Status::ok();
}

} // namespace whale::rt
