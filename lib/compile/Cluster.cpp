//===- Cluster.cpp - the short form and the JSON cluster file -------------===//

#include "lib/compile/Cluster.h"

#include "perfmodel/DeviceModel.h"
#include "runtime/WhaleRuntime.h"
#include "support/InputFile.h"
#include "support/JsonFields.h"
#include "support/Limits.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

namespace whale {
namespace {

/// A byte count from a number: false for negative, non-finite or
/// unrepresentable ones (past 2^62 bytes, far beyond any device).
bool bytesOf(double value, int64_t &out) {
  if (!(value >= 0) || !(value < 0x1p62))
    return false;
  out = static_cast<int64_t>(value);
  return true;
}

/// The devices of all entries together: past this, planning and search
/// would run for days rather than fail.
bool withinDeviceLimit(size_t devices, const std::string &where,
                       std::string &error) {
  if (devices <= static_cast<size_t>(kMaxClusterDevices))
    return true;
  error = where + ": more than " + std::to_string(kMaxClusterDevices) +
          " devices in all";
  return false;
}

/// "2GiB", "512MiB", "1e9" or a plain byte count.
bool parseBytes(llvm::StringRef text, int64_t &out) {
  text = text.trim();
  double scale = 1;
  for (auto [suffix, factor] :
       {std::pair<const char *, double>{"GiB", 1024.0 * 1024 * 1024},
        {"MiB", 1024.0 * 1024},
        {"KiB", 1024.0},
        {"GB", 1e9},
        {"MB", 1e6},
        {"KB", 1e3}})
    if (text.consume_back(suffix)) {
      scale = factor;
      break;
    }
  double value;
  if (text.trim().getAsDouble(value))
    return false;
  return bytesOf(value * scale, out);
}

bool applyOption(DeviceSpec &d, llvm::StringRef option, std::string &error) {
  auto [key, value] = option.split('=');
  key = key.trim();
  value = value.trim();
  if (key == "threads") {
    unsigned t;
    if (value.getAsInteger(10, t) || t < 1 || t > kMaxThreads) {
      error = "threads must be a whole number from 1 to " +
              std::to_string(kMaxThreads) + ", not '" + value.str() + "'";
      return false;
    }
    d.threads = static_cast<int>(t);
    return true;
  }
  if (key == "mem" || key == "memory") {
    if (!parseBytes(value, d.memory) || d.memory == 0) {
      error = "mem must be a size above 0 such as 2GiB or 512MiB (leave it "
              "out for no limit), not '" +
              value.str() + "'";
      return false;
    }
    return true;
  }
  if (key == "flops") {
    if (value.getAsDouble(d.flops) || !(d.flops >= 0) ||
        !std::isfinite(d.flops)) {
      error = "flops must be a number, not '" + value.str() + "'";
      return false;
    }
    return true;
  }
  if (key == "membw") {
    if (value.getAsDouble(d.memoryBandwidth) || !(d.memoryBandwidth > 0) ||
        !std::isfinite(d.memoryBandwidth)) {
      error = "membw must be the memory's bytes a second (membw=40e9), not '" +
              value.str() + "'";
      return false;
    }
    return true;
  }
  if (key == "sms") {
    unsigned n;
    if (!d.gpu) {
      error =
          "sms is a GPU's share of its SMs, for cuda devices (cuda:0@sms=66)";
      return false;
    }
    if (value.getAsInteger(10, n) || n < 1 || n > kMaxGpuSms) {
      error = "sms must be a whole number of SMs from 1 to " +
              std::to_string(kMaxGpuSms) + ", not '" + value.str() + "'";
      return false;
    }
    d.sms = static_cast<int>(n);
    return true;
  }
  if (key == "share") {
    double share;
    if (d.gpu) {
      error = "share is a CPU device's part of its cores' time, for cpu "
              "devices (cpu:1@share=0.5; a GPU's share is sms=K)";
      return false;
    }
    if (value.getAsDouble(share) || !(share > 0 && share <= 1)) {
      error = "share must be a number above 0 and at most 1, not '" +
              value.str() + "'";
      return false;
    }
    d.cpuShare = share;
    return true;
  }
  if (key == "model") {
    const perf::DeviceModel *m = perf::findGpuModel(value.str());
    if (!d.gpu || !m) {
      error = !d.gpu ? "model names a GPU's data sheet, for cuda "
                       "devices (cuda:0@model=H200)"
                     : "unknown GPU model '" + value.str() +
                           "' (known: " + perf::knownGpuModelNames() + ")";
      return false;
    }
    d.model = m->name;
    return true;
  }
  error = "unknown device option '" + key.str() + "' (known: threads, mem, " +
          "flops, membw" + (d.gpu ? ", sms, model" : ", share") + ")";
  return false;
}

/// A GPU with a data sheet takes the sheet's memory and rate where the
/// cluster declares neither, the rate at its share of the SMs; a share
/// larger than the sheet's GPU is refused.
bool applyDataSheet(DeviceSpec &d, bool memoryDeclared, bool flopsDeclared,
                    const std::string &where, std::string &error) {
  const perf::DeviceModel *m =
      d.model.empty() ? nullptr : perf::findGpuModel(d.model);
  if (!m)
    return true;
  if (d.sms > m->parallelUnits) {
    error = where + ": sms=" + std::to_string(d.sms) + " is more than the " +
            m->name + "'s " + std::to_string(m->parallelUnits) + " SMs";
    return false;
  }
  if (!memoryDeclared)
    d.memory = m->memoryBytes;
  if (!flopsDeclared)
    d.flops = m->matmulFlops * perf::smShare(describe(d, 1));
  return true;
}

bool parseShort(llvm::StringRef spec, Cluster &out, std::string &error) {
  llvm::SmallVector<llvm::StringRef> parts;
  spec.split(parts, ',');
  size_t firstOfEntry = 0;
  for (llvm::StringRef raw : parts) {
    llvm::StringRef part = raw.trim();
    // `key=value` continues the options of the entry before it.
    if (!part.contains(':') && part.contains('=') && !out.devices.empty()) {
      for (size_t i = firstOfEntry; i < out.devices.size(); ++i)
        if (!applyOption(out.devices[i], part, error))
          return false;
      continue;
    }
    auto [device, options] = part.split('@');
    auto [kind, count] = device.split(':');
    if (kind == "cuda") {
      // cuda:N is GPU N (one device). Whether this machine has it is
      // checked by what runs on it (checkClusterDevices), so plans for
      // GPUs can be made anywhere.
      unsigned ordinal;
      if (count.getAsInteger(10, ordinal) || ordinal > 1024) {
        error = "'" + part.str() + "': expected cuda:N, N the GPU's number";
        return false;
      }
      firstOfEntry = out.devices.size();
      DeviceSpec gpu;
      gpu.gpu = true;
      gpu.ordinal = static_cast<int>(ordinal);
      out.devices.push_back(gpu);
      if (!options.empty() && !applyOption(out.devices.back(), options, error))
        return false;
      continue;
    }
    unsigned n;
    if (kind != "cpu" || count.getAsInteger(10, n) || n < 1 || n > 4096) {
      error =
          "'" + part.str() +
          "' is not a device list: expected cpu:N (N from 1 to 4096) or cuda:N "
          "(GPU N), "
          "optionally with @threads=T,mem=SIZE, as in cpu:2,cpu:2@threads=2";
      return false;
    }
    firstOfEntry = out.devices.size();
    if (!withinDeviceLimit(out.devices.size() + n, "the devices", error))
      return false;
    for (unsigned i = 0; i < n; ++i)
      out.devices.push_back(DeviceSpec{});
    if (!options.empty())
      for (size_t i = firstOfEntry; i < out.devices.size(); ++i)
        if (!applyOption(out.devices[i], options, error))
          return false;
  }
  for (size_t i = 0; i < out.devices.size(); ++i)
    if (!applyDataSheet(
            out.devices[i], out.devices[i].memory > 0, out.devices[i].flops > 0,
            "cuda:" + std::to_string(out.devices[i].ordinal), error))
      return false;
  out.nodes = {"localhost"};
  out.hosts = {""};
  return true;
}

bool parseLink(const llvm::json::Object *o, LinkSpec &link,
               const std::string &where, std::string &error) {
  if (!o)
    return true;
  JsonFields f(*o, where, error);
  // A bandwidth of 0 is one not declared (the device model's is used).
  return f.onlyKnown({"bandwidth", "latency"}) &&
         f.number("bandwidth", 0, 1e18, link.bandwidth) &&
         f.number("latency", 0, 1e3, link.latency);
}

} // namespace

/// Counts the contexts each GPU of the cluster holds that no SM share
/// splits (DeviceSpec::contexts).
static void countContexts(Cluster &cluster) {
  std::map<std::pair<int, int>, int> plain; // (node, ordinal) -> contexts
  for (const DeviceSpec &d : cluster.devices)
    if (d.gpu && d.sms == 0)
      ++plain[{d.node, d.ordinal}];
  for (DeviceSpec &d : cluster.devices)
    d.contexts = d.gpu && d.sms == 0 ? plain[{d.node, d.ordinal}] : 1;
}

bool parseClusterJson(const std::string &text, const std::string &path,
                      Cluster &out, std::string &error) {
  if (!rt::jsonDepthWithin(text, rt::kMaxJsonDepth)) {
    error = path + ": nested more than " + std::to_string(rt::kMaxJsonDepth) +
            " levels deep";
    return false;
  }
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed) {
    error = path + ": " + llvm::toString(parsed.takeError());
    return false;
  }
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root) {
    error = path + ": expected an object with a non-empty \"nodes\" array";
    return false;
  }
  JsonFields top(*root, path + ":", error);
  if (!top.onlyKnown({"nodes", "links"}))
    return false;
  const llvm::json::Array *nodes = top.array("nodes");
  if (!nodes || nodes->empty()) {
    if (!top.failed())
      error = path + ": expected an object with a non-empty \"nodes\" array";
    return false;
  }
  std::set<std::string> names;
  for (size_t n = 0; n < nodes->size(); ++n) {
    std::string where = path + ": nodes[" + std::to_string(n) + "]";
    const llvm::json::Object *node = (*nodes)[n].getAsObject();
    if (!node) {
      error = where + " must be an object";
      return false;
    }
    JsonFields nf(*node, where, error);
    std::string base = "node" + std::to_string(n), oneHost;
    // "count": that many nodes alike (a cluster of 384 DGX boxes is one
    // entry), named name0, name1, ...
    int64_t copies = 1;
    if (!nf.onlyKnown({"name", "count", "host", "hosts", "devices"}) ||
        !nf.string("name", base, /*nonEmpty=*/true) ||
        !nf.integer("count", 1, 4096, copies) ||
        !nf.string("host", oneHost, /*nonEmpty=*/true))
      return false;
    const llvm::json::Array *devices = nf.array("devices");
    if (!devices || devices->empty()) {
      if (!nf.failed())
        error = where + " needs a non-empty \"devices\" array";
      return false;
    }
    // "host" (one node) or "hosts" (one per copy): the machines they are.
    std::vector<std::string> hosts(static_cast<size_t>(copies));
    const llvm::json::Array *list = nf.array("hosts");
    if (nf.failed())
      return false;
    if (nf.has("host") && list) {
      error = where + ": name its machine in \"host\" or \"hosts\", not both";
      return false;
    }
    if (nf.has("host")) {
      if (copies > 1) {
        error = where + ": a node of count " + std::to_string(copies) +
                " names its machines in \"hosts\", one each";
        return false;
      }
      hosts[0] = oneHost;
    } else if (list) {
      if (static_cast<int64_t>(list->size()) != copies) {
        error = where + ": \"hosts\" names " + std::to_string(list->size()) +
                " machines for a count of " + std::to_string(copies);
        return false;
      }
      for (size_t h = 0; h < list->size(); ++h) {
        auto one = (*list)[h].getAsString();
        if (!one || one->empty()) {
          error =
              where + ".hosts[" + std::to_string(h) + "] must be a host name";
          return false;
        }
        hosts[h] = one->str();
      }
    }
    size_t firstDevice = out.devices.size();
    for (size_t i = 0; i < devices->size(); ++i) {
      std::string at = where + ".devices[" + std::to_string(i) + "]";
      const llvm::json::Object *d = (*devices)[i].getAsObject();
      if (!d) {
        error = at + " must be an object";
        return false;
      }
      JsonFields df(*d, at, error);
      DeviceSpec spec;
      spec.node = static_cast<int>(out.nodes.size());
      std::string kind = "cpu";
      int64_t count = 1, first = 0, threads = 0, sms = 0;
      std::string model;
      if (!df.onlyKnown({"kind", "count", "first", "threads", "memory", "model",
                         "flops", "sms", "share", "memory_bandwidth"}) ||
          !df.number("memory_bandwidth", 1, 1e16, spec.memoryBandwidth) ||
          !df.number("share", 1e-6, 1, spec.cpuShare) ||
          !df.integer("sms", 1, kMaxGpuSms, sms) || !df.string("kind", kind) ||
          !df.integer("count", 1, 4096, count) ||
          !df.integer("first", 0, 1024, first) ||
          !df.integer("threads", 1, kMaxThreads, threads) ||
          !df.string("model", model, /*nonEmpty=*/true) ||
          !df.number("flops", 0, 1e21, spec.flops))
        return false;
      if (kind != "cpu" && kind != "cuda") {
        error = at + ": kind must be \"cpu\" or \"cuda\", not \"" + kind + "\"";
        return false;
      }
      spec.gpu = kind == "cuda";
      if (df.has("first") && !spec.gpu) {
        error = at + ": \"first\" is the first GPU's number, for kind \"cuda\"";
        return false;
      }
      if (df.has("sms") && !spec.gpu) {
        error = at + ": \"sms\" is a GPU's share of its SMs, for kind \"cuda\"";
        return false;
      }
      if (df.has("share") && spec.gpu) {
        error = at + ": \"share\" is a CPU device's part of its cores' "
                     "time, for kind \"cpu\" (a GPU's is \"sms\")";
        return false;
      }
      spec.sms = static_cast<int>(sms);
      // GPUs `first` .. first + count - 1 of the node.
      spec.ordinal = static_cast<int>(first);
      spec.threads = static_cast<int>(threads);
      if (const llvm::json::Value *m = d->get("memory")) {
        bool ok = false;
        if (auto s = m->getAsString())
          ok = parseBytes(*s, spec.memory);
        else if (auto v = m->getAsNumber())
          ok = bytesOf(*v, spec.memory);
        if (!ok || spec.memory == 0) {
          error = at + ": memory must be more than 0 bytes, in bytes or a " +
                  "size such as \"2GiB\" (leave it out for no limit)";
          return false;
        }
      }
      if (!model.empty()) {
        const perf::DeviceModel *m = perf::findGpuModel(model);
        if (!m || !spec.gpu) {
          error = at + ": " +
                  (m ? "a GPU model needs kind \"cuda\""
                     : "unknown GPU model \"" + model +
                           "\" (known: " + perf::knownGpuModelNames() + ")");
          return false;
        }
        spec.model = m->name;
        // The data sheet's memory unless the file says otherwise; its rate
        // is the simulator's to use, the planner balances by `flops`.
        if (!applyDataSheet(spec, df.has("memory"), df.has("flops"), at, error))
          return false;
      }
      if (!withinDeviceLimit(out.devices.size() + static_cast<size_t>(count),
                             at, error))
        return false;
      for (int64_t c = 0; c < count; ++c) {
        out.devices.push_back(spec);
        ++spec.ordinal; // the next GPU, for kind cuda
      }
    }
    out.nodes.push_back(copies > 1 ? base + "0" : base);
    out.hosts.push_back(hosts[0]);
    const size_t perNode = out.devices.size() - firstDevice;
    for (int64_t c = 1; c < copies; ++c) {
      if (!withinDeviceLimit(out.devices.size() + perNode, where, error))
        return false;
      for (size_t i = 0; i < perNode; ++i) {
        DeviceSpec copy = out.devices[firstDevice + i];
        copy.node = static_cast<int>(out.nodes.size());
        out.devices.push_back(copy);
      }
      out.nodes.push_back(base + std::to_string(c));
      out.hosts.push_back(hosts[static_cast<size_t>(c)]);
    }
    for (size_t k = out.nodes.size() - static_cast<size_t>(copies);
         k < out.nodes.size(); ++k)
      if (!names.insert(out.nodes[k]).second) {
        error = where + ": a node named \"" + out.nodes[k] +
                "\" is named twice (node names tell the nodes apart)";
        return false;
      }
  }
  if (const llvm::json::Object *links = top.objectField("links")) {
    JsonFields lf(*links, path + ": links", error);
    if (!lf.onlyKnown({"intra_node", "inter_node"}))
      return false;
    const llvm::json::Object *intra = lf.objectField("intra_node");
    const llvm::json::Object *inter = lf.objectField("inter_node");
    if (lf.failed() ||
        !parseLink(intra, out.intraNode, path + ": links.intra_node", error) ||
        !parseLink(inter, out.interNode, path + ": links.inter_node", error))
      return false;
  }
  if (top.failed())
    return false;
  countContexts(out);
  return true;
}

namespace {

bool parseJson(const std::string &path, Cluster &out, std::string &error) {
  std::string text;
  error =
      rt::readRegularFile(path, "the cluster file", rt::kMaxTextInput, text);
  return error.empty() && parseClusterJson(text, path, out, error);
}

} // namespace

std::string clusterJson(const Cluster &cluster) {
  llvm::json::Array nodes;
  for (size_t n = 0; n < std::max<size_t>(1, cluster.nodes.size()); ++n) {
    llvm::json::Array devices;
    for (const DeviceSpec &d : cluster.devices) {
      if (d.node != static_cast<int>(n))
        continue;
      llvm::json::Object o{{"kind", d.kind()}};
      // The GPU's number: read back without it, every GPU would be GPU 0
      // (and contexts of one GPU would be GPUs of their own, or the
      // reverse).
      if (d.gpu && d.ordinal > 0)
        o["first"] = d.ordinal;
      if (d.threads > 0)
        o["threads"] = d.threads;
      if (d.memory > 0)
        o["memory"] = d.memory;
      if (d.flops > 0)
        o["flops"] = d.flops;
      if (!d.model.empty())
        o["model"] = d.model;
      if (d.sms > 0)
        o["sms"] = d.sms;
      if (!d.gpu && d.cpuShare < 1)
        o["share"] = d.cpuShare;
      if (d.memoryBandwidth > 0)
        o["memory_bandwidth"] = d.memoryBandwidth;
      devices.push_back(std::move(o));
    }
    llvm::json::Object node{
        {"name", n < cluster.nodes.size() ? cluster.nodes[n] : "localhost"},
        {"devices", std::move(devices)}};
    if (n < cluster.hosts.size() && !cluster.hosts[n].empty())
      node["host"] = cluster.hosts[n];
    nodes.push_back(std::move(node));
  }
  llvm::json::Object root{{"nodes", std::move(nodes)}};
  auto link = [](const LinkSpec &l) {
    return llvm::json::Object{{"bandwidth", l.bandwidth},
                              {"latency", l.latency}};
  };
  root["links"] = llvm::json::Object{{"intra_node", link(cluster.intraNode)},
                                     {"inter_node", link(cluster.interNode)}};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return s;
}

int sharedThreads(const Cluster &cluster, int totalThreads) {
  int total =
      totalThreads > 0
          ? totalThreads
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max<int>(
      1, total / std::max<int>(1, static_cast<int>(cluster.devices.size())));
}

perf::DeviceDescription describe(const DeviceSpec &d, int defaultThreads) {
  perf::DeviceDescription out = d;
  out.contexts = out.gpu && d.sms == 0 ? std::max(1, d.contexts) : 1;
  // A declared or data-sheet rate is the whole GPU's (or its share's);
  // contexts side by side on it divide it.
  out.flops = d.flops / out.contexts;
  out.threads = threadsOf(d, defaultThreads);
  return out;
}

std::vector<double> deviceRates(const Cluster &cluster, int defaultThreads) {
  std::vector<double> rates;
  for (const DeviceSpec &d : cluster.devices)
    rates.push_back(perf::rateOf(describe(d, defaultThreads)));
  return rates;
}

bool parseCluster(const std::string &spec, Cluster &out, std::string &error) {
  out = Cluster{};
  llvm::StringRef s(spec);
  if (s.ends_with(".json") || llvm::sys::fs::is_regular_file(spec))
    return parseJson(spec, out, error); // which counts the contexts
  if (!parseShort(s, out, error)) {
    error = "--cluster: " + error;
    return false;
  }
  countContexts(out);
  return true;
}

bool checkClusterDevices(const Cluster &cluster, std::string &error) {
  for (size_t i = 0; i < cluster.devices.size(); ++i) {
    char why[640] = "";
    std::string name = runtimeDeviceName(cluster.devices[i], i);
    if (whale_rt_device_check(name.c_str(), why, sizeof why) != WHALE_RT_OK) {
      error = std::string("--cluster: ") + why;
      return false;
    }
  }
  return true;
}

std::vector<RankPlace> devicePlaces(const Cluster &cluster) {
  std::vector<RankPlace> out;
  std::map<std::pair<int, std::string>, int> seen;
  for (const DeviceSpec &d : cluster.devices) {
    std::string node = d.node >= 0 && size_t(d.node) < cluster.nodes.size()
                           ? cluster.nodes[d.node]
                           : "node" + std::to_string(d.node);
    int index = seen[{d.node, d.kind()}]++;
    out.push_back({node + "/" + d.kind() + ":" + std::to_string(index), node});
  }
  return out;
}

std::string runtimeDeviceName(const DeviceSpec &spec, size_t index) {
  if (!spec.gpu) {
    std::string name = "cpu:" + std::to_string(index);
    if (spec.cpuShare < 1) {
      char share[32];
      std::snprintf(share, sizeof share, "%.17g", spec.cpuShare);
      name += std::string("@share=") + share;
    }
    return name;
  }
  std::string name = "cuda:" + std::to_string(spec.ordinal);
  return spec.sms > 0 ? name + "@sms=" + std::to_string(spec.sms) : name;
}

} // namespace whale
