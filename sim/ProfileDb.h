//===- ProfileDb.h - measured event times, kept between runs ------*- C++
//-*-===//
//
// `whale profile` times each distinct event of a plan on the real devices
// and writes them here; `whale sim --profile` reads them back, so the
// simulator uses a measurement wherever one exists and the device model
// elsewhere. A database is JSON: the machine and the commit that made it,
// then per device class (a GPU model, or a CPU of some threads) the seconds
// of each event, keyed by the event's key (op and shapes). A profile of
// several devices also keeps each device's own compute times, under the
// device's place in the cluster it was taken on ("cpu threads=1 #0 of 2
// (cluster 5f0c...)"):
// a simulation of that same cluster gives each device its own times, so
// the replay has the profiling run's slower device and the waits for it.
//
//   {"version": 1, "machine": "...", "commit": "...", "created": "...",
//    "devices": [{"device": "cpu threads=1",
//                 "events": [{"event": "whale.matmul tensor<...> ...",
//                             "seconds": 1.2e-05, "runs": 40,
//                             "cost": {"flops": 2.1e6, "bytes": 3.2e4,
//                                      "m": 64, "n": 128, "k": 128,
//                                      "batch": 1, "bf16": false}}]}]}
//
// An event's cost lets the simulator price the events of other plans (a
// wider model, a shard of it) from the nearest timed one (nearestTime).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SIM_PROFILEDB_H
#define WHALE_SIM_PROFILEDB_H

#include "sim/Simulator.h"

#include <map>
#include <optional>
#include <string>

namespace whale::sim {

class ProfileDb {
public:
  struct Entry {
    double seconds = 0;
    int64_t runs = 0;
    /// Timed inside a run of the plan, not alone.
    bool inContext = false;
    /// A compute event's cost (FLOPs, bytes, and a matrix product's
    /// shape): what lets an event the database has not timed be priced
    /// from the nearest one of its family it has (nearestTime).
    std::optional<OpCost> cost;
    /// The key without its sizes, worked out by set() where there is a cost.
    std::string family;
  };

  /// How an event is priced on a device.
  enum class Pricing { Measured, Nearest, Model };

  /// The class a device's timings belong to: a GPU's model name, or
  /// "cpu threads=N".
  static std::string deviceKey(const DeviceModel &device);
  /// The key of the own times of device `index` of `cluster`: its class,
  /// its place, and a digest of every device's model, rates and node, so
  /// that only the same cluster finds them.
  static std::string ownKey(const Topology &cluster, int64_t index);
  /// ownKey(...) where the database holds times under it, else "".
  std::string ownTimesOf(const Topology &cluster, int64_t index) const;

  /// The most seconds one event may take in a database: an op of more than
  /// a million seconds is no measurement, and the replay's sums of such
  /// times would not stay finite. The reader refuses more, and so does
  /// every writer (withinLimits), so that what one writes the other reads.
  static constexpr double kMaxEventSeconds = 1e6;
  /// "" when every time is within kMaxEventSeconds, else the first that is
  /// not, named.
  std::string withinLimits() const;

  void set(const std::string &device, const std::string &event, Entry entry);
  /// `e`'s time, keyed by its key, with its cost where it computes.
  void set(const std::string &device, const Event &e, Entry entry);
  std::optional<double> lookup(const std::string &device,
                               const std::string &event) const;
  size_t size() const;

  /// A compute event the database has not timed, priced from the timed one
  /// of its family on `device` nearest in size: the family is its op, its
  /// operands' and results' ranks and element types, and what else its key
  /// says beside the shapes (a fused region's body, transposes, which
  /// operand a gradient is for, bf16); the size is a matrix product's m, n,
  /// k and batch, else its bytes and FLOPs, each by its logarithm. The
  /// device model's time for `e`, scaled by what that neighbour measured
  /// against the model's time for it. So a profile of a small model on one
  /// GPU prices the ops of a large one on a cluster of that GPU at the
  /// efficiency measured near their sizes, not the model's alone. nullopt
  /// when it holds none of the family.
  std::optional<double> nearestTime(const std::string &device, const Event &e,
                                    const DeviceModel &d) const;
  /// The most FLOP/s a timed product reached on `device` (0 if none): no
  /// product priced from a neighbour runs faster (the search's lower
  /// bound counts on it).
  double fastestProductRate(const std::string &device) const;
  /// How measuredTime prices a compute event on `d`.
  Pricing pricing(const Event &e, const DeviceModel &d) const;
  /// measuredTime's time of `e` on `d` (nullopt: the device model's), and
  /// how it was found.
  std::optional<double> timeOf(const Event &e, const DeviceModel &d,
                               Pricing &how) const;

  /// The measured time of an event on a device, for the simulator: the
  /// device's own (DeviceModel::ownTimes) where it has them, else its
  /// class's, else the nearest timed one's of its family (nearestTime).
  MeasuredTime measuredTime() const;
  MeasuredCollective measuredCollective() const;
  /// A collective's key in a database: its event's and the group's size.
  static std::string collectiveKey(const Event &e, int64_t ranks);

  std::string toJson() const;
  /// Reads a database; false with `error` naming the file and the place in
  /// it (`PROFILE.json: devices[0].events[3]: ...`) when it is not one.
  bool parse(const std::string &text, const std::string &path,
             std::string &error);
  bool load(const std::string &path, std::string &error);
  /// The databases as one: an event several of them hold takes the median
  /// of their times (of an even count, the mean of the middle two) and
  /// the sum of their runs. Profiles of one plan taken at different
  /// moments, or of several plans sharing events, so give each event the
  /// machine's typical speed, not whichever moment was read last.
  static ProfileDb combine(const std::vector<ProfileDb> &dbs);

  std::string machine, commit, created;

private:
  std::map<std::string, std::map<std::string, Entry>> devices;
};

} // namespace whale::sim

#endif
