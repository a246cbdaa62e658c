//===- EventProgram.h - a plan's rank programs as sequences of events -*- C++
//-*-===//
//
// What the simulator replays: each stage's rank program (the same function
// the runtime runs) as a sequence of steps, each naming one distinct event.
// An event is an op at its shapes (compute), a message to or from another
// stage, or a collective of its size over its kind of group. Events are
// deduplicated: every micro-batch of every stage that runs the same op at
// the same shapes points at one event, which is timed once (DistSim's
// event-based model), so a plan of thousands of devices times a few hundred
// events.
//
// Nothing here knows MLIR: Extract.h builds these from the rank programs.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SIM_EVENTPROGRAM_H
#define WHALE_SIM_EVENTPROGRAM_H

#include "perfmodel/DeviceModel.h"
#include "sim/Collectives.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace whale::sim {

// The simulator prices with the one cost-and-speed model (perfmodel/).
using perf::DeviceModel;
using perf::OpCost;
using perf::opSeconds;

/// Wait: the end of a collective a step before started (Step::request).
enum class StepKind : uint8_t { Compute, Send, Recv, Collective, Wait };

/// Which ranks a collective spans, as the runtime resolves it from where a
/// rank sits in the grid of stages x replicas.
enum class GroupKind : uint8_t {
  Replicas,   ///< every rank of this stage (data-parallel gradient sync)
  Stages,     ///< every rank of this replica (clipping over the pipeline)
  ShardPeers, ///< the ranks of this stage holding the same part
  ShardGroup, ///< the `shards` consecutive ranks of a split TaskGraph
};

const char *groupName(GroupKind g);

struct Event {
  std::string op;        ///< "whale.matmul", "whale.send", ...
  std::string signature; ///< operand and result types
  StepKind kind = StepKind::Compute;
  OpCost cost; ///< compute events
  Collective collective = Collective::AllReduce;
  GroupKind group = GroupKind::Replicas;
  int64_t shards = 0;   ///< ShardPeers and ShardGroup: the group's size
  /// Replicas and ShardPeers cut into sharding groups of this many
  /// consecutive members (hybrid sharding, a group "hsdp"); 0: whole. The
  /// collective runs in the sharding group, except a reduce to owners
  /// (ReduceScatter), which then sums each owner's part over its copies
  /// (the owners at its position in the other groups): it spans the whole
  /// group, in two phases.
  int64_t sharding = 0;
  double commBytes = 0; ///< messages and collectives: the bytes moved

  /// What makes two events the same: the op, its shapes and, for a
  /// collective, the kind and size of its group.
  std::string key() const;
};

struct Step {
  uint32_t event = 0;
  /// Compute and collectives: the op's position in its rank function's
  /// body, which a traced run names its time by (whale profile).
  int32_t site = -1;
  // The rest depends on the kind of the step's event, and the kinds share
  // the room: a step is 16 bytes, and a plan of 512 micro-batches a stage
  // reads and replays millions of them.
  union {
    int32_t peer = -1; ///< Send, Recv: the other stage
    /// Collective: its place among this program's collectives over the
    /// same kind of group, which pairs it with the other members' steps.
    uint32_t sequence;
  };
  union {
    /// Collective: a collective the rank starts and goes on (runs aside,
    /// in the order started), and the Wait for it: the start's place among
    /// the program's started collectives. -1: a collective the rank waits
    /// in.
    int32_t request = -1;
    int32_t tag; ///< Send, Recv: the message's tag
  };
};
static_assert(sizeof(Step) == 16, "a step's fields share their room");

struct StageProgram {
  std::string name; ///< the rank function, `<model>_stage<s>`
  int64_t stage = 0;
  std::vector<Step> steps;
};

/// The distinct events of a plan, shared by all its programs.
class EventTable {
public:
  /// The index of `e`, added when no equal event is there yet.
  uint32_t intern(Event e);
  const Event &operator[](uint32_t i) const { return events[i]; }
  size_t size() const { return events.size(); }
  const std::vector<Event> &all() const { return events; }

private:
  std::vector<Event> events;
  std::unordered_map<std::string, uint32_t> index;
};

/// The programs of one shape of rank (one micro-batch size and shard
/// weight), one per stage, in stage order.
struct ProgramSet {
  std::vector<StageProgram> stages;
};

} // namespace whale::sim

#endif
