//===- Cluster.h - the devices a plan runs on ----------------------*- C++
//-*-===//
//
// A cluster comes from a short form (`cpu:4`, `cpu:2,cpu:2@threads=2`) or a
// JSON file (docs/cluster.md): nodes holding devices, each with its kind,
// threads, memory limit and compute rate, and the links between them.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_COMPILE_CLUSTER_H
#define WHALE_LIB_COMPILE_CLUSTER_H

#include "perfmodel/DeviceSpeed.h"
#include "runtime/state/Reshard.h"

#include <cstdint>
#include <string>
#include <vector>

namespace whale {

/// A device of the cluster: what prices it (perf::DeviceDescription, as
/// the cluster declares it) and where it is. Two fields are not resolved
/// yet: `threads` 0 takes the run's --threads, shared out (threadsOf), and
/// a cuda device's `flops` is its whole GPU's where contexts share the
/// GPU (`contexts`, counted by parseCluster); describe() resolves both.
struct DeviceSpec : perf::DeviceDescription {
  DeviceSpec() { threads = 0; }
  int ordinal = 0; ///< cuda: the GPU's number on its machine
  int node = 0;
  /// "cuda" or "cpu", as clusters and the runtime name the kind.
  const char *kind() const { return gpu ? "cuda" : "cpu"; }
};

struct LinkSpec {
  double bandwidth = 0; ///< bytes/s; 0: not declared
  double latency = 0;   ///< seconds
};

/// The runtime's name of device `index` of a cluster: "cpu:<index>",
/// "cuda:<ordinal>", or "cuda:<ordinal>@sms=<K>" for a share of a GPU.
std::string runtimeDeviceName(const DeviceSpec &spec, size_t index);

struct Cluster {
  std::vector<DeviceSpec> devices;
  std::vector<std::string> nodes;
  /// The machine each node is (its host name), "" where the file names
  /// none: under mpirun, process r must run on the host of device r's node.
  std::vector<std::string> hosts;
  LinkSpec intraNode, interNode;
};

/// Each device's place, the same for the same device in two plans: its
/// node, its kind and its place among the node's devices of that kind
/// ("node0/cpu:1").
std::vector<RankPlace> devicePlaces(const Cluster &cluster);

/// Whether this machine can open every device of the cluster (its GPUs:
/// the driver, the plugin, the ordinals); why not in `error`. Running needs
/// this; planning does not.
bool checkClusterDevices(const Cluster &cluster, std::string &error);

/// Threads of a device that declares none: `totalThreads` (0: every core
/// of this machine) shared out over the cluster's devices, at least one.
int sharedThreads(const Cluster &cluster, int totalThreads);

/// The threads device `d` runs with.
inline int threadsOf(const DeviceSpec &d, int shared) {
  return d.threads > 0 ? d.threads : shared;
}

/// What the cost-and-speed model needs of device `d`
/// (perfmodel/DeviceSpeed.h), with the threads it runs with.
perf::DeviceDescription describe(const DeviceSpec &d, int defaultThreads);

/// Each device's rate as the planner uses it (perf::rateOf): declared,
/// else nominal.
std::vector<double> deviceRates(const Cluster &cluster, int defaultThreads);

/// The cluster as a JSON cluster file (what parseCluster reads back): one
/// entry per device, with `flops` where declared or measured.
std::string clusterJson(const Cluster &cluster);

/// Parses the text of a JSON cluster file; `path` names it in errors.
bool parseClusterJson(const std::string &text, const std::string &path,
                      Cluster &out, std::string &error);

/// Parses SPEC: a JSON file when it names one (or ends in .json), else the
/// short form. On failure returns false with a message naming what was
/// wrong and where.
bool parseCluster(const std::string &spec, Cluster &out, std::string &error);

} // namespace whale

#endif
