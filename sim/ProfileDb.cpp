//===- ProfileDb.cpp - measured event times, kept between runs ------------===//

#include "sim/ProfileDb.h"

#include "support/InputFile.h"
#include "support/JsonFields.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cctype>
#include <cmath>
#include <map>
#include <set>

namespace whale::sim {

std::string ProfileDb::deviceKey(const DeviceModel &device) {
  if (device.gpu)
    return device.name;
  return "cpu threads=" + std::to_string(device.parallelUnits);
}

std::string ProfileDb::ownKey(const Topology &cluster, int64_t index) {
  std::string devices;
  for (size_t d = 0; d < cluster.devices.size(); ++d) {
    const DeviceModel &m = cluster.devices[d];
    devices += llvm::formatv("{0}/{1}/{2}/{3}/{4};", m.name, m.matmulFlops,
                             m.memoryBandwidth, m.parallelUnits,
                             d < cluster.node.size() ? cluster.node[d] : 0)
                   .str();
  }
  return deviceKey(cluster.devices[index]) + " #" + std::to_string(index) +
         " of " + std::to_string(cluster.devices.size()) + " (cluster " +
         llvm::utohexstr(llvm::xxh3_64bits(devices), /*LowerCase=*/true) + ")";
}

std::string ProfileDb::ownTimesOf(const Topology &cluster,
                                  int64_t index) const {
  std::string key = ownKey(cluster, index);
  auto d = devices.find(key);
  return d == devices.end() || d->second.empty() ? std::string() : key;
}

namespace {

/// How far apart two events' sizes are: a product's dimensions, another
/// op's bytes and FLOPs, each by its logarithm.
double sizeDistance(const OpCost &a, const OpCost &b) {
  auto term = [](double x, double y) {
    double d = std::log2(std::max(1.0, x)) - std::log2(std::max(1.0, y));
    return d * d;
  };
  if (a.matmul && b.matmul)
    return term(a.m, b.m) + term(a.n, b.n) + term(a.k, b.k) +
           term(a.batch, b.batch);
  return term(a.bytes, b.bytes) + term(a.flops, b.flops);
}

/// An event key without its sizes: each tensor type keeps its rank and
/// element type (`tensor<8x64x128xf32>` reads `tensor<?x?x?xf32>`), and
/// the rest (the op, a fused region's body, transposes, which operand a
/// gradient is for, bf16) stays. Events of one family stand for each
/// other: a weight's gradient reads its operands in another order than an
/// input's, a broadcast operand streams less than a full one.
std::string familyOf(llvm::StringRef key) {
  std::string out;
  out.reserve(key.size());
  bool inTensor = false;
  for (size_t i = 0; i < key.size(); ++i) {
    if (key.substr(i).starts_with("tensor<"))
      inTensor = true;
    else if (key[i] == '>')
      inTensor = false;
    if (inTensor && std::isdigit(static_cast<unsigned char>(key[i]))) {
      while (i + 1 < key.size() &&
             std::isdigit(static_cast<unsigned char>(key[i + 1])))
        ++i;
      out += '?';
      continue;
    }
    out += key[i];
  }
  return out;
}

} // namespace

std::string ProfileDb::withinLimits() const {
  for (const auto &[device, events] : devices)
    for (const auto &[event, entry] : events)
      if (!(entry.seconds <= kMaxEventSeconds))
        return "the event '" + event + "' on " + device + " took " +
               std::to_string(entry.seconds) +
               " s, more than the million seconds a profile holds";
  return "";
}

void ProfileDb::set(const std::string &device, const std::string &event,
                    Entry entry) {
  if (entry.cost)
    entry.family = familyOf(event);
  devices[device][event] = std::move(entry);
}

void ProfileDb::set(const std::string &device, const Event &e, Entry entry) {
  if (e.kind == StepKind::Compute)
    entry.cost = e.cost;
  set(device, e.key(), entry);
}

std::optional<double> ProfileDb::lookup(const std::string &device,
                                        const std::string &event) const {
  auto d = devices.find(device);
  if (d == devices.end())
    return std::nullopt;
  auto e = d->second.find(event);
  if (e == d->second.end())
    return std::nullopt;
  return e->second.seconds;
}

size_t ProfileDb::size() const {
  size_t n = 0;
  for (auto &[device, events] : devices)
    n += events.size();
  return n;
}

std::optional<double> ProfileDb::nearestTime(const std::string &device,
                                             const Event &e,
                                             const DeviceModel &d) const {
  if (e.kind != StepKind::Compute)
    return std::nullopt;
  auto events = devices.find(device);
  if (events == devices.end())
    return std::nullopt;
  const std::string family = familyOf(e.key());
  const Entry *nearest = nullptr;
  double best = 0;
  for (const auto &[key, entry] : events->second) {
    if (!entry.cost || entry.cost->matmul != e.cost.matmul ||
        entry.cost->bf16 != e.cost.bf16 || !(entry.seconds > 0) ||
        entry.family != family)
      continue;
    double distance = sizeDistance(*entry.cost, e.cost);
    if (!nearest || distance < best) {
      nearest = &entry;
      best = distance;
    }
  }
  if (!nearest)
    return std::nullopt;
  double modelled = opSeconds(*nearest->cost, d);
  if (!(modelled > 0))
    return std::nullopt;
  double scaled = opSeconds(e.cost, d) * (nearest->seconds / modelled);
  // The model's curve may carry a product's ratio to a shape it deems more
  // efficient than any measured: never past the fastest rate measured.
  double fastest = e.cost.matmul ? fastestProductRate(device) : 0;
  return fastest > 0 ? std::max(scaled, e.cost.flops / fastest) : scaled;
}

double ProfileDb::fastestProductRate(const std::string &device) const {
  double fastest = 0;
  if (auto events = devices.find(device); events != devices.end())
    for (const auto &[key, entry] : events->second)
      if (entry.cost && entry.cost->matmul && entry.seconds > 0)
        fastest = std::max(fastest, entry.cost->flops / entry.seconds);
  return fastest;
}

std::optional<double> ProfileDb::timeOf(const Event &e, const DeviceModel &d,
                                        Pricing &how) const {
  const std::string key = e.key();
  how = Pricing::Measured;
  if (!d.ownTimes.empty())
    if (std::optional<double> own = lookup(d.ownTimes, key))
      return own;
  if (std::optional<double> s = lookup(deviceKey(d), key))
    return s;
  how = Pricing::Nearest;
  if (std::optional<double> s = nearestTime(deviceKey(d), e, d))
    return s;
  how = Pricing::Model;
  return std::nullopt;
}

ProfileDb::Pricing ProfileDb::pricing(const Event &e,
                                      const DeviceModel &d) const {
  Pricing how;
  (void)timeOf(e, d, how);
  return how;
}

MeasuredTime ProfileDb::measuredTime() const {
  return [this](const Event &e, const DeviceModel &d) {
    Pricing how;
    return timeOf(e, d, how);
  };
}

std::string ProfileDb::collectiveKey(const Event &e, int64_t ranks) {
  return e.key() + " among " + std::to_string(ranks);
}

MeasuredCollective ProfileDb::measuredCollective() const {
  return [this](const Event &e, int64_t ranks, const DeviceModel &d) {
    return lookup(deviceKey(d), collectiveKey(e, ranks));
  };
}

std::string ProfileDb::toJson() const {
  llvm::json::Array list;
  for (auto &[device, events] : devices) {
    llvm::json::Array entries;
    for (auto &[event, entry] : events) {
      llvm::json::Object o{{"event", event},
                           {"seconds", entry.seconds},
                           {"runs", entry.runs},
                           {"in_context", entry.inContext}};
      if (const std::optional<OpCost> &c = entry.cost) {
        llvm::json::Object cost{{"flops", c->flops}, {"bytes", c->bytes}};
        if (c->matmul) {
          cost["m"] = c->m;
          cost["n"] = c->n;
          cost["k"] = c->k;
          cost["batch"] = c->batch;
          cost["bf16"] = c->bf16;
          // A direct kernel's product (a convolution) is priced by its
          // tiles, a BLAS's by its copies: the nearest event's scale
          // compares like with like.
          if (c->direct)
            cost["direct"] = true;
        }
        o["cost"] = std::move(cost);
      }
      entries.push_back(std::move(o));
    }
    list.push_back(
        llvm::json::Object{{"device", device}, {"events", std::move(entries)}});
  }
  llvm::json::Object root{{"version", 1},
                          {"machine", machine},
                          {"commit", commit},
                          {"created", created},
                          {"devices", std::move(list)}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return out;
}

ProfileDb ProfileDb::combine(const std::vector<ProfileDb> &dbs) {
  ProfileDb out;
  std::map<std::string, std::map<std::string, std::vector<Entry>>> all;
  for (const ProfileDb &db : dbs) {
    for (const auto &[device, events] : db.devices)
      for (const auto &[event, entry] : events)
        all[device][event].push_back(entry);
    if (out.machine.empty())
      out.machine = db.machine;
    if (out.commit.empty())
      out.commit = db.commit;
    if (out.created.empty())
      out.created = db.created;
  }
  for (auto &[device, events] : all)
    for (auto &[event, entries] : events) {
      std::sort(
          entries.begin(), entries.end(),
          [](const Entry &a, const Entry &b) { return a.seconds < b.seconds; });
      const size_t n = entries.size();
      Entry e;
      e.seconds =
          n % 2 ? entries[n / 2].seconds
                : (entries[n / 2 - 1].seconds + entries[n / 2].seconds) / 2;
      for (const Entry &one : entries) {
        e.runs += one.runs;
        e.inContext = e.inContext || one.inContext;
        if (!e.cost)
          e.cost = one.cost;
      }
      out.set(device, event, e);
    }
  return out;
}

namespace {

/// An entry's "cost" object: FLOPs and bytes, and a matrix product's shape
/// (m, n, k, batch and bf16 come together or not at all; "direct", a
/// direct kernel's product, may come with them).
bool parseCost(const llvm::json::Object &p, const std::string &where,
               ProfileDb::Entry &entry, std::string &error) {
  JsonFields f(p, where, error);
  OpCost c;
  if (!f.onlyKnown(
          {"flops", "bytes", "m", "n", "k", "batch", "bf16", "direct"}) ||
      !f.number("flops", 0, 1e30, c.flops) ||
      !f.number("bytes", 0, 1e30, c.bytes))
    return false;
  if (!f.has("flops") || !f.has("bytes")) {
    error = where + ": needs \"flops\" and \"bytes\"";
    return false;
  }
  c.matmul = f.has("m");
  if (c.matmul) {
    for (const char *key : {"m", "n", "k", "batch", "bf16"})
      if (!f.has(key)) {
        error = where + ": a matrix product's cost needs \"m\", \"n\", "
                        "\"k\", \"batch\" and \"bf16\"";
        return false;
      }
    int64_t m = 0, n = 0, k = 0, batch = 0;
    const int64_t most = int64_t(1) << 40;
    if (!f.integer("m", 1, most, m) || !f.integer("n", 1, most, n) ||
        !f.integer("k", 1, most, k) || !f.integer("batch", 1, most, batch) ||
        !f.boolean("bf16", c.bf16))
      return false;
    c.m = m;
    c.n = n;
    c.k = k;
    c.batch = batch;
    // Optional: databases written before it was recorded are BLAS products.
    if (f.has("direct") && !f.boolean("direct", c.direct))
      return false;
  }
  entry.cost = c;
  return true;
}

} // namespace

bool ProfileDb::parse(const std::string &text, const std::string &path,
                      std::string &error) {
  devices.clear();
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
  if (!root || root->getInteger("version") != 1) {
    error = path + ": not a profile database (expected an object with "
                   "\"version\": 1)";
    return false;
  }
  JsonFields top(*root, path + ":", error);
  if (!top.onlyKnown({"version", "machine", "commit", "created", "devices"}) ||
      !top.string("machine", machine) || !top.string("commit", commit) ||
      !top.string("created", created))
    return false;
  const llvm::json::Array *list = top.array("devices");
  if (!list) {
    if (!top.failed())
      error = path + ": expected a \"devices\" array";
    return false;
  }
  std::set<std::string> seenDevices;
  for (size_t i = 0; i < list->size(); ++i) {
    std::string where = path + ": devices[" + std::to_string(i) + "]";
    const llvm::json::Object *d = (*list)[i].getAsObject();
    if (!d) {
      error = where + ": expected {\"device\": NAME, \"events\": [...]}";
      return false;
    }
    JsonFields df(*d, where, error);
    std::string device;
    if (!df.onlyKnown({"device", "events"}) ||
        !df.string("device", device, /*nonEmpty=*/true))
      return false;
    const llvm::json::Array *events = df.array("events");
    if (!events || device.empty()) {
      if (!df.failed())
        error = where + ": expected {\"device\": NAME, \"events\": [...]}";
      return false;
    }
    if (!seenDevices.insert(device).second) {
      error = where + ": device \"" + device +
              "\" is listed twice (list its events once)";
      return false;
    }
    std::map<std::string, size_t> seenEvents;
    for (size_t j = 0; j < events->size(); ++j) {
      std::string at = where + ".events[" + std::to_string(j) + "]";
      const llvm::json::Object *e = (*events)[j].getAsObject();
      if (!e) {
        error = at + ": expected {\"event\": KEY, \"seconds\": S}";
        return false;
      }
      JsonFields ef(*e, at, error);
      std::string event;
      Entry entry{-1, 0, false, std::nullopt};
      if (!ef.onlyKnown({"event", "seconds", "runs", "in_context", "cost"}) ||
          !ef.string("event", event, /*nonEmpty=*/true) ||
          !ef.number("seconds", 0, kMaxEventSeconds, entry.seconds) ||
          !ef.integer("runs", 0, int64_t(1) << 40, entry.runs) ||
          !ef.boolean("in_context", entry.inContext))
        return false;
      if (event.empty() || entry.seconds < 0) {
        error = at + ": expected {\"event\": KEY, \"seconds\": S}";
        return false;
      }
      if (auto [it, fresh] = seenEvents.try_emplace(event, j); !fresh) {
        error = at + ": the event of events[" + std::to_string(it->second) +
                "] again, which time holds is not known (list it once)";
        return false;
      }
      if (const llvm::json::Object *c = ef.objectField("cost")) {
        if (!parseCost(*c, at + ".cost", entry, error))
          return false;
      } else if (ef.failed()) {
        return false;
      }
      set(device, event, entry);
    }
  }
  return true;
}

bool ProfileDb::load(const std::string &path, std::string &error) {
  std::string text;
  error = rt::readRegularFile(path, "the profile", rt::kMaxTextInput, text);
  return error.empty() && parse(text, path, error);
}

} // namespace whale::sim
