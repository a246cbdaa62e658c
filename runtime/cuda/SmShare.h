//===- SmShare.h - a device on a share of a GPU's SMs ------------*- C++
//-*-===//
//
// cuda:N@sms=K is a device that runs on K of GPU N's streaming
// multiprocessors, through a CUDA green context: unequal devices on one
// physical GPU, for measuring what balancing gains (and what-if runs of
// mixed clusters). The driver hands out SMs in groups: at least a minimum
// and in multiples of an alignment (8 and 8 on Hopper), and it would round
// a request up silently. A device whose rate the planner took as K SMs
// must run on K, so a count the driver cannot give is refused, naming the
// nearest ones it can. Several shares of one GPU take disjoint SMs: each
// is split off what the earlier ones left.
//
// Host logic only (no CUDA), so it is tested on any machine.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_SMSHARE_H
#define WHALE_RUNTIME_CUDA_SMSHARE_H

#include <algorithm>
#include <string>

namespace whale::rt::cuda {

/// A device name's parts: "cuda:3" or "cuda:3@sms=40".
struct CudaName {
  int ordinal = -1; ///< -1: not a valid GPU number
  int sms = 0;      ///< 0: the whole GPU
};

/// Whether `name` names a GPU ("cuda:..."); its ordinal and share in `out`.
/// A cuda name with a bad number or share keeps ordinal -1 or sms -1, for
/// the caller to refuse with the name.
inline bool parseCudaName(const std::string &name, CudaName &out) {
  out = CudaName{};
  if (name.rfind("cuda:", 0) != 0)
    return false;
  auto number = [](const std::string &digits, int &value) {
    if (digits.empty() || digits.size() > 6 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      return false;
    value = std::stoi(digits);
    return true;
  };
  std::string rest = name.substr(5), share;
  if (size_t at = rest.find('@'); at != std::string::npos) {
    share = rest.substr(at + 1);
    rest = rest.substr(0, at);
    const std::string key = "sms=";
    if (share.rfind(key, 0) != 0 ||
        !number(share.substr(key.size()), out.sms) || out.sms < 1)
      out.sms = -1;
  }
  if (!number(rest, out.ordinal))
    out.ordinal = -1;
  return true;
}

/// What the driver says of a GPU's SMs: all of them, those not yet given to
/// a share of this process, and how it groups them.
struct SmResources {
  int total = 0;
  int free = 0;
  int minimum = 1;   ///< the smallest group it makes
  int alignment = 1; ///< groups are multiples of this
};

/// Why `requested` SMs cannot be given from `r` ("" when they can): not a
/// count the driver groups SMs in, more than the GPU has, or more than the
/// other shares of it left.
inline std::string smShareError(int requested, const SmResources &r) {
  const int align = std::max(1, r.alignment);
  const int least = std::max(r.minimum, align);
  if (requested > r.total)
    return "sms=" + std::to_string(requested) + " is more than this GPU's " +
           std::to_string(r.total) + " SMs";
  if (requested < least || requested % align != 0) {
    int below = requested / align * align;
    int above = std::max(least, (requested + align - 1) / align * align);
    std::string nearest =
        below >= least ? std::to_string(below) + " or " + std::to_string(above)
                       : std::to_string(above);
    return "this GPU gives SMs to a share in multiples of " +
           std::to_string(align) + ", at least " + std::to_string(least) +
           " (" + std::to_string(r.total) + " in all): sms=" + nearest +
           " can be given, not " + std::to_string(requested);
  }
  if (requested > r.free)
    return "sms=" + std::to_string(requested) + " but only " +
           std::to_string(r.free) + " of this GPU's " +
           std::to_string(r.total) +
           " SMs are left: the other devices on it hold the rest";
  return "";
}

} // namespace whale::rt::cuda

#endif
