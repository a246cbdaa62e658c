//===- DevicePlugin.h - devices by name, GPUs through a plugin ---*- C++
//-*-===//
//
// "cpu:N" (and any other name not starting with "cuda:") is a CPU device.
// "cuda:N" is GPU N, served by libwhale_cuda.so, which is loaded with dlopen
// on first use and only after the NVIDIA driver (libcuda.so.1) is found: a
// machine without a GPU never loads CUDA, and asking for one there is an
// error that says so, not a crash.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CORE_DEVICEPLUGIN_H
#define WHALE_RUNTIME_CORE_DEVICEPLUGIN_H

#include "runtime/core/Device.h"

#include <memory>
#include <string>

namespace whale::rt {

/// Opens the device `name` with `threads` (CPU) and a memory limit in bytes
/// (0: none).
Status openDevice(const std::string &name, int threads, int64_t memoryLimit,
                  std::unique_ptr<Device> &out);

/// Whether `name` names a device this machine can open (for a GPU: the
/// driver, the plugin and the ordinal), without opening it.
Status checkDevice(const std::string &name);

} // namespace whale::rt

#endif
