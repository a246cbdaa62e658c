//===- DevicePluginAbi.h - what the CUDA plugin exports ----------*- C++
//-*-===//
//
// The only symbols libwhale_cuda.so makes visible. The runtime finds them
// with dlsym after dlopen (runtime/core/DevicePlugin.cpp); both sides are built
// by one build with one compiler, so a C++ Device crosses the boundary.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_DEVICEPLUGINABI_H
#define WHALE_RUNTIME_CUDA_DEVICEPLUGINABI_H

#include <cstdint>

namespace whale::rt {
class Device;
}

#define WHALE_PLUGIN_EXPORT __attribute__((visibility("default")))

extern "C" {
/// How many GPUs the driver shows, or -1 with the reason in `error`.
typedef int32_t (*whale_cuda_device_count_fn)(char *error, int64_t error_size);
/// GPU `ordinal` as a device named `name` on `sms` of its SMs (0: all; a
/// green context otherwise) with a memory limit in bytes (0: none), owned
/// by the caller; null with the reason in `error`.
typedef whale::rt::Device *(*whale_cuda_open_device_fn)(
    const char *name, int32_t ordinal, int32_t sms, int64_t memory_limit,
    char *error, int64_t error_size);
}

#endif
