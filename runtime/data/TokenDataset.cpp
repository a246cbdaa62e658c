//===- TokenDataset.cpp - a pre-tokenized corpus, memory-mapped -----------===//

#include "runtime/data/TokenDataset.h"

namespace whale::rt {

Status TokenDataset::view(const unsigned char *data, size_t size,
                          const std::string &name, const std::string &dtype,
                          int64_t seq, TokenDataset &out) {
  const std::string what = "token data '" + name + "'";
  if (dtype != "uint16" && dtype != "uint32")
    return Status::invalid(what +
                           ": dtype must be \"uint16\" or \"uint32\", "
                           "got \"" +
                           dtype + "\"");
  if (seq < 1)
    return Status::invalid(what + " needs seq >= 1");
  TokenDataset ds;
  ds.path = name;
  ds.seq = seq;
  ds.width = dtype == "uint16" ? 2 : 4;
  if (size % static_cast<size_t>(ds.width) != 0)
    return Status::invalid(what + " has " + std::to_string(size) +
                           " bytes, not a whole number of " + dtype +
                           " tokens");
  ds.tokens = static_cast<int64_t>(size) / ds.width;
  if (ds.tokens - 1 < seq)
    return Status::invalid(
        what + " has " + std::to_string(ds.tokens) +
        " tokens; one sample of seq = " + std::to_string(seq) + " needs " +
        std::to_string(seq + 1));
  ds.data = data;
  // Non-overlapping windows; the last token of one is the first target of
  // the next, so every token is a target once.
  ds.samples = (ds.tokens - 1) / seq;
  out = std::move(ds);
  return Status::ok();
}

Status TokenDataset::open(const std::string &path, const std::string &dtype,
                          int64_t seq, TokenDataset &out) {
  MappedFile file;
  if (Status s = MappedFile::open(path, "token data '" + path + "'", file); !s)
    return s;
  TokenDataset ds;
  if (Status s = view(file.data(), file.size(), path, dtype, seq, ds); !s)
    return s;
  ds.file = std::move(file); // the view's bytes, owned from here
  out = std::move(ds);
  return Status::ok();
}

Status TokenDataset::sample(int64_t index, int32_t *inputs,
                            int32_t *targets) const {
  if (index < 0 || index >= samples)
    return Status::invalid("token data '" + path + "' has no sample " +
                           std::to_string(index));
  auto at = [&](int64_t k) -> uint64_t {
    const unsigned char *p = data + k * width;
    // Little endian, whatever the host.
    uint64_t v = 0;
    for (int b = width - 1; b >= 0; --b)
      v = (v << 8) | p[b];
    return v;
  };
  const int64_t first = index * seq;
  for (int64_t t = 0; t <= seq; ++t) {
    uint64_t id = at(first + t);
    if (id > 0x7fffffffu)
      return Status::invalid("token data '" + path + "': token " +
                             std::to_string(first + t) + " is " +
                             std::to_string(id) + ", past 2^31 - 1");
    if (t < seq)
      inputs[t] = static_cast<int32_t>(id);
    if (t > 0)
      targets[t - 1] = static_cast<int32_t>(id);
  }
  return Status::ok();
}

} // namespace whale::rt
