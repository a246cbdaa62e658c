//===- ProfileDb.cpp - measured event times, kept between runs ------------===//

#include "sim/ProfileDb.h"

#include "runtime/InputFile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cmath>

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

void ProfileDb::set(const std::string &device, const std::string &event,
                    Entry entry) {
  devices[device][event] = entry;
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

MeasuredTime ProfileDb::measuredTime() const {
  return [this](const Event &e, const DeviceModel &d) {
    std::string key = e.key();
    if (!d.ownTimes.empty())
      if (std::optional<double> own = lookup(d.ownTimes, key))
        return own;
    return lookup(deviceKey(d), key);
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
    for (auto &[event, entry] : events)
      entries.push_back(llvm::json::Object{{"event", event},
                                           {"seconds", entry.seconds},
                                           {"runs", entry.runs},
                                           {"in_context", entry.inContext}});
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
      }
      out.devices[device][event] = e;
    }
  return out;
}

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
  auto str = [&](const char *key) {
    auto s = root->getString(key);
    return s ? s->str() : std::string();
  };
  machine = str("machine");
  commit = str("commit");
  created = str("created");
  const llvm::json::Array *list = root->getArray("devices");
  if (!list) {
    error = path + ": expected a \"devices\" array";
    return false;
  }
  for (size_t i = 0; i < list->size(); ++i) {
    std::string where = path + ": devices[" + std::to_string(i) + "]";
    const llvm::json::Object *d = (*list)[i].getAsObject();
    auto device = d ? d->getString("device") : std::nullopt;
    const llvm::json::Array *events = d ? d->getArray("events") : nullptr;
    if (!device || !events) {
      error = where + ": expected {\"device\": NAME, \"events\": [...]}";
      return false;
    }
    for (size_t j = 0; j < events->size(); ++j) {
      std::string at = where + ".events[" + std::to_string(j) + "]";
      const llvm::json::Object *e = (*events)[j].getAsObject();
      auto event = e ? e->getString("event") : std::nullopt;
      auto seconds = e ? e->getNumber("seconds") : std::nullopt;
      if (!event || !seconds) {
        error = at + ": expected {\"event\": KEY, \"seconds\": S}";
        return false;
      }
      if (!std::isfinite(*seconds) || *seconds < 0) {
        error = at + ": seconds must be a finite number, not negative";
        return false;
      }
      set(device->str(), event->str(),
          {*seconds, e->getInteger("runs").value_or(0),
           e->getBoolean("in_context").value_or(false)});
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
