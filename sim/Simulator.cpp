//===- Simulator.cpp - a discrete-event replay of the rank programs -------===//

#include "sim/Simulator.h"

#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>
#include <unordered_map>

namespace whale::sim {

double computeSeconds(const Event &e, const DeviceModel &device,
                      const MeasuredTime &measured) {
  if (measured)
    if (std::optional<double> s = measured(e, device))
      return *s;
  // An op that moves and computes nothing (a reshape's view) launches
  // nothing either.
  if (e.cost.flops <= 0 && e.cost.bytes <= 0)
    return 0;
  return opSeconds(e.cost, device);
}

namespace {

/// The replay's tables of messages and collectives in flight are looked up
/// at every send, receive and collective step: hashed, not ordered.
struct TupleHash {
  template <typename... T> size_t operator()(const std::tuple<T...> &t) const {
    return std::apply(
        [](const auto &...v) { return size_t(llvm::hash_combine(v...)); }, t);
  }
};

/// Where a timed interval goes: the rank's compute or its communication,
/// a collective run aside while the rank computes (on the communication
/// track, not counted as the rank's time), or the rank waiting for one
/// (communication, on the compute track).
enum class Lane { Compute, Comm, Aside, Wait };

/// The ranks a collective spans, as replayed ranks (one per class), and
/// the size and slowest link of the real group.
struct Group {
  std::vector<uint32_t> members;
  int64_t size = 1;
  Link link;
  /// A reduce to owners over sharding groups (Event::sharding): `size` and
  /// `link` are a sharding group's, `members` the whole group's, and the
  /// owners' parts are then all-reduced over `copies` ranks on
  /// `copiesLink`.
  int64_t copies = 1;
  Link copiesLink;
};

class Replay {
public:
  Replay(const EventTable &events, const PlanShape &plan,
         const Topology &topology, const SimOptions &options, SimResult &out)
      : events(events), plan(plan), topology(topology), options(options),
        out(out) {}

  bool run(std::string &error);

private:
  using InstanceKey = std::tuple<uint32_t, uint32_t>; ///< group, sequence
  /// A collective the rank started and has not waited for.
  struct Started {
    InstanceKey key;
    uint32_t event, group;
    bool waited = false;
  };
  struct State {
    size_t pc = 0;
    double clock = 0;
    bool arrived = false; ///< at the collective `pc` points to
    /// Started collectives by request; the rank's collective thread runs
    /// them in order, each from when the one before it ended.
    std::vector<Started> started;
    double asideFree = 0;
  };
  struct Instance {
    uint32_t arrived = 0, left = 0;
    double latest = 0, end = -1;
    std::vector<uint32_t> waiters;
  };
  /// The messages of one (class, from, to, tag) sent and not yet
  /// received, in the order sent (the runtime pairs a tag sent twice with
  /// its receives in order), and the rank waiting for the next one.
  struct Mailbox {
    struct Message {
      double sent, arrival;
    };
    llvm::SmallVector<Message, 1> inFlight;
    int64_t waiter = -1;
  };

  uint32_t rankOf(int64_t cls, int64_t stage) const {
    return static_cast<uint32_t>(cls * plan.stages + stage);
  }
  int64_t deviceOf(int64_t stage, int64_t replica) const {
    return plan.grid[stage * plan.replicas + replica];
  }
  const StageProgram &programOf(uint32_t rank) const {
    int64_t s = rank % plan.stages, r = representative[rank / plan.stages];
    return plan.programs[r]->stages[s];
  }
  Link linkBetween(const std::vector<int64_t> &devices) const;
  void formClasses();
  /// The group of the collective `event` that `rank` takes part in.
  uint32_t groupOf(uint32_t rank, uint32_t event);
  double compute(uint32_t event, int64_t device);
  double collectiveTime(uint32_t event, uint32_t g, const DeviceModel &model);
  /// Counts `rank` in at the collective of `step` at `at`; its instance.
  Instance &arrive(uint32_t rank, const Step &step, uint32_t g, double at,
                   const DeviceModel &model);
  /// Whether the collectives `rank` started over group `g` have ended (it
  /// waits on the first that has not, else); `until` gets their end.
  bool settled(uint32_t rank, uint32_t g, double &until);
  bool advance(uint32_t rank);
  void record(uint32_t rank, uint32_t event, Lane lane, double start,
              double duration) {
    SimRank &r = out.ranks[rank];
    if (lane == Lane::Compute)
      r.computeSeconds += duration;
    else if (lane != Lane::Aside)
      r.commSeconds += duration;
    out.perEvent[event].seconds += duration * r.likeIt;
    if (options.trace)
      out.intervals.push_back({rank, event, lane != Lane::Compute, start,
                               duration, lane == Lane::Wait,
                               lane == Lane::Aside});
  }

  const EventTable &events;
  const PlanShape &plan;
  const Topology &topology;
  const SimOptions &options;
  SimResult &out;

  std::vector<int64_t> classOf, representative;
  std::vector<State> states;
  std::deque<uint32_t> ready;
  std::vector<Group> groups;
  /// groupOf by rank and event, at rank * events + event (-1: not yet).
  std::vector<int64_t> groupMemo;
  std::map<
      std::tuple<uint8_t, int64_t, int64_t, int64_t, std::vector<uint32_t>>,
      uint32_t>
      groupIds;
  std::unordered_map<InstanceKey, Instance, TupleHash> instances;
  /// By (class, from, to, tag); a mailbox is dropped once empty, so the
  /// table holds only messages in flight.
  std::unordered_map<std::tuple<int64_t, int64_t, int64_t, int64_t>, Mailbox,
                     TupleHash>
      mailboxes;
  /// Compute seconds by (device model, event), each timed once (-1: not
  /// yet), at model * events + event.
  std::vector<double> computeMemo;
  std::map<std::pair<uint32_t, uint32_t>, double> collectiveMemo;
  std::vector<int64_t> modelIndex; ///< per device: its first device alike
};

void Replay::formClasses() {
  // Replicas alike at every stage (device model, programs) form a class.
  std::map<std::vector<std::string>, int64_t> byKey;
  classOf.assign(plan.replicas, 0);
  for (int64_t r = 0; r < plan.replicas; ++r) {
    std::vector<std::string> key;
    key.push_back(
        std::to_string(reinterpret_cast<uintptr_t>(plan.programs[r])));
    for (int64_t s = 0; s < plan.stages; ++s)
      key.push_back(std::to_string(modelIndex[deviceOf(s, r)]));
    auto [it, fresh] =
        byKey.try_emplace(key, static_cast<int64_t>(representative.size()));
    if (fresh)
      representative.push_back(r);
    classOf[r] = it->second;
  }
}

Link Replay::linkBetween(const std::vector<int64_t> &devices) const {
  bool oneNode = true;
  for (int64_t d : devices)
    oneNode = oneNode && topology.node[d] == topology.node[devices.front()];
  if (!oneNode)
    return topology.interNode;
  Link link = topology.intraNode;
  if (link.bandwidth <= 0) {
    // No declared intra-node link: GPUs' data-sheet links (NVLink, PCIe);
    // devices without one (CPUs in one process) pass data as copies in
    // memory, handed over between threads.
    double slowest = 0, latency = 0;
    for (int64_t d : devices) {
      const DeviceModel &m = topology.devices[d];
      double b = m.gpu ? m.nodeLinkBandwidth : m.memoryBandwidth;
      slowest = slowest == 0 ? b : std::min(slowest, b);
      latency = std::max(latency, m.nodeLinkLatency);
    }
    link.bandwidth = slowest;
    if (link.latency <= 0)
      link.latency = latency;
  }
  return link;
}

uint32_t Replay::groupOf(uint32_t rank, uint32_t event) {
  const size_t at = size_t(rank) * events.size() + event;
  if (groupMemo.size() <= at)
    groupMemo.resize(at + 1, -1);
  if (groupMemo[at] >= 0)
    return static_cast<uint32_t>(groupMemo[at]);
  const Event &e = events[event];
  const int64_t cls = rank / plan.stages, stage = rank % plan.stages;
  const int64_t r = representative[cls];
  std::vector<int64_t> devices;
  std::vector<uint32_t> members;
  auto addReplica = [&](int64_t other) {
    devices.push_back(deviceOf(stage, other));
    members.push_back(rankOf(classOf[other], stage));
  };
  const int64_t k = std::max<int64_t>(1, e.shards);
  // The replicas of a data-parallel group, in order (r among them).
  std::vector<int64_t> base;
  switch (e.group) {
  case GroupKind::Replicas:
    for (int64_t o = 0; o < plan.replicas; ++o)
      base.push_back(o);
    break;
  case GroupKind::Stages:
    for (int64_t s = 0; s < plan.stages; ++s) {
      devices.push_back(deviceOf(s, r));
      members.push_back(rankOf(cls, s));
    }
    break;
  case GroupKind::ShardPeers:
    for (int64_t o = r % k; o < plan.replicas; o += k)
      base.push_back(o);
    break;
  case GroupKind::ShardGroup:
    for (int64_t o = r - r % k; o < std::min(plan.replicas, r - r % k + k); ++o)
      addReplica(o);
    break;
  }
  // Cut into sharding groups: the collective's own group is r's, and a
  // reduce to owners spans every group (its copies' phase), priced with
  // r's copies.
  int64_t copies = 1;
  std::vector<int64_t> copyDevices;
  const int64_t cut = e.sharding;
  if (cut > 0 && !base.empty() && int64_t(base.size()) % cut == 0) {
    const int64_t at = std::find(base.begin(), base.end(), r) - base.begin();
    const bool whole = e.collective == Collective::ReduceScatter;
    for (int64_t i = 0; i < int64_t(base.size()); ++i) {
      if (i / cut == at / cut)
        addReplica(base[i]);
      else if (whole)
        members.push_back(rankOf(classOf[base[i]], stage));
      if (whole && i % cut == at % cut)
        copyDevices.push_back(deviceOf(stage, base[i]));
    }
    copies = int64_t(copyDevices.size());
  } else {
    for (int64_t o : base)
      addReplica(o);
  }
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  // A reduce over sharding groups and a gather in one may have the same
  // replayed members (replicas alike are one class): its copies tell them
  // apart.
  auto idKey = std::make_tuple(static_cast<uint8_t>(e.group), e.shards,
                               e.sharding, copies, members);
  auto [it, fresh] =
      groupIds.try_emplace(idKey, static_cast<uint32_t>(groups.size()));
  if (fresh)
    groups.push_back({members, static_cast<int64_t>(devices.size()),
                      linkBetween(devices), copies,
                      copies > 1 ? linkBetween(copyDevices) : Link{}});
  groupMemo[at] = it->second;
  return it->second;
}

double Replay::compute(uint32_t event, int64_t device) {
  // By (device model, event): a flat table, read at every compute step.
  const size_t at = static_cast<size_t>(modelIndex[device]) * events.size() +
                    event;
  if (computeMemo.size() <= at)
    computeMemo.resize(at + 1, -1.0);
  double &s = computeMemo[at];
  if (s < 0)
    s = computeSeconds(events[event], topology.devices[device],
                       options.measured);
  return s;
}

double Replay::collectiveTime(uint32_t event, uint32_t g,
                              const DeviceModel &model) {
  auto memo = collectiveMemo.find({event, g});
  if (memo != collectiveMemo.end())
    return memo->second;
  const Event &e = events[event];
  const Group &group = groups[g];
  std::optional<double> measured;
  if (options.measuredCollective)
    measured = options.measuredCollective(e, group.size, model);
  double d = measured
                 ? *measured
                 : collectiveSeconds(e.collective,
                                     bestAlgorithm(e.collective, e.commBytes,
                                                   group.size, group.link),
                                     e.commBytes, group.size, group.link);
  // Hybrid sharding: each owner's part (1/size of the bucket) then summed
  // over its copies (a measured time has both phases).
  if (group.copies > 1 && !measured) {
    const double part = e.commBytes / double(std::max<int64_t>(1, group.size));
    d += collectiveSeconds(Collective::AllReduce,
                           bestAlgorithm(Collective::AllReduce, part,
                                         group.copies, group.copiesLink),
                           part, group.copies, group.copiesLink);
  }
  collectiveMemo.emplace(std::make_pair(event, g), d);
  return d;
}

Replay::Instance &Replay::arrive(uint32_t rank, const Step &step, uint32_t g,
                                 double at, const DeviceModel &model) {
  Instance &inst = instances[std::make_tuple(g, step.sequence)];
  ++inst.arrived;
  inst.latest = std::max(inst.latest, at);
  if (inst.arrived == groups[g].members.size()) {
    inst.end = inst.latest + collectiveTime(step.event, g, model);
    for (uint32_t w : inst.waiters)
      ready.push_back(w);
    inst.waiters.clear();
  }
  return inst;
}

bool Replay::settled(uint32_t rank, uint32_t g, double &until) {
  for (const Started &s : states[rank].started) {
    if (s.waited || s.group != g)
      continue;
    Instance &inst = instances.find(s.key)->second;
    if (inst.end < 0) {
      inst.waiters.push_back(rank);
      return false;
    }
    until = std::max(until, inst.end);
  }
  return true;
}

/// Runs `rank` until it ends or waits on another; true when it ended.
bool Replay::advance(uint32_t rank) {
  State &st = states[rank];
  const StageProgram &program = programOf(rank);
  const int64_t cls = rank / plan.stages, stage = rank % plan.stages;
  const int64_t device = deviceOf(stage, representative[cls]);
  const DeviceModel &model = topology.devices[device];
  while (st.pc < program.steps.size()) {
    const Step &step = program.steps[st.pc];
    const Event &e = events[step.event];
    switch (e.kind) {
    case StepKind::Compute: {
      double d = compute(step.event, device);
      record(rank, step.event, Lane::Compute, st.clock, d);
      st.clock += d;
      break;
    }
    case StepKind::Send: {
      // Buffered: the sender copies the message out and goes on; it
      // arrives after the link's latency and transfer.
      double copy =
          model.launchSeconds +
          (model.memoryBandwidth > 0 ? e.commBytes / model.memoryBandwidth : 0);
      record(rank, step.event, Lane::Comm, st.clock, copy);
      st.clock += copy;
      int64_t to = deviceOf(step.peer, representative[cls]);
      double flight =
          collectiveSeconds(Collective::SendRecv, Algorithm::Ring, e.commBytes,
                            2, linkBetween({device, to}));
      Mailbox &box = mailboxes[{cls, stage, step.peer, step.tag}];
      box.inFlight.push_back({st.clock, st.clock + flight});
      if (box.waiter >= 0)
        ready.push_back(static_cast<uint32_t>(box.waiter));
      box.waiter = -1;
      break;
    }
    case StepKind::Recv: {
      auto it = mailboxes.try_emplace({cls, step.peer, stage, step.tag}).first;
      Mailbox &box = it->second;
      if (box.inFlight.empty()) {
        box.waiter = rank;
        return false;
      }
      const Mailbox::Message m = box.inFlight.front();
      box.inFlight.erase(box.inFlight.begin());
      if (box.inFlight.empty())
        mailboxes.erase(it);
      if (m.arrival > st.clock) {
        // The wait while the message is on the wire is communication;
        // before it was sent, the rank is idle.
        double from = std::max(st.clock, m.sent);
        record(rank, step.event, Lane::Comm, from, m.arrival - from);
        st.clock = m.arrival;
      }
      break;
    }
    case StepKind::Collective: {
      uint32_t g = groupOf(rank, step.event);
      const InstanceKey key = std::make_tuple(g, step.sequence);
      if (step.request >= 0) {
        // Started: the rank's collective thread takes it once the one
        // started before has ended; the rank goes on at once.
        if (!st.started.empty() && !st.started.back().waited) {
          auto prev = instances.find(st.started.back().key);
          if (prev->second.end < 0) {
            prev->second.waiters.push_back(rank);
            return false;
          }
          st.asideFree = std::max(st.asideFree, prev->second.end);
        }
        arrive(rank, step, g, std::max(st.clock, st.asideFree), model);
        if (st.started.size() <= size_t(step.request))
          st.started.resize(step.request + 1);
        st.started[step.request] = {key, step.event, g, false};
        break;
      }
      if (!st.arrived) {
        // A group's collectives pair by order: the ones the rank started
        // over this group end first.
        double until = 0;
        if (!settled(rank, g, until))
          return false;
        st.clock = std::max(st.clock, until);
        st.arrived = true;
        arrive(rank, step, g, st.clock, model);
      }
      Instance &inst = instances[key];
      if (inst.end < 0) {
        inst.waiters.push_back(rank);
        return false;
      }
      st.arrived = false;
      record(rank, step.event, Lane::Comm, inst.latest,
             inst.end - inst.latest);
      out.ranks[rank].collectiveSeconds += inst.end - inst.latest;
      st.clock = inst.end;
      // Done with by every member: forgotten, so the table holds only the
      // collectives in flight (millions pass in a large plan).
      if (++inst.left == groups[g].members.size())
        instances.erase(key);
      break;
    }
    case StepKind::Wait: {
      Started &s = st.started[step.request];
      auto it = instances.find(s.key);
      Instance &inst = it->second;
      if (inst.end < 0) {
        inst.waiters.push_back(rank);
        return false;
      }
      // The sum ran aside; what the rank waits for it is exposed.
      record(rank, s.event, Lane::Aside, inst.latest, inst.end - inst.latest);
      if (inst.end > st.clock) {
        record(rank, step.event, Lane::Wait, st.clock, inst.end - st.clock);
        st.clock = inst.end;
      }
      st.asideFree = std::max(st.asideFree, inst.end);
      s.waited = true;
      if (++inst.left == groups[s.group].members.size())
        instances.erase(it);
      break;
    }
    }
    ++st.pc;
    ++out.replayedSteps;
    out.perEvent[step.event].count += out.ranks[rank].likeIt;
  }
  return true;
}

bool Replay::run(std::string &error) {
  // Devices alike (the same model, no times of their own) share their
  // timings.
  std::map<std::tuple<std::string, double, double, std::string>, int64_t>
      models;
  for (size_t d = 0; d < topology.devices.size(); ++d) {
    const DeviceModel &m = topology.devices[d];
    auto key =
        std::make_tuple(m.name, m.matmulFlops, m.memoryBandwidth, m.ownTimes);
    modelIndex.push_back(models.try_emplace(key, d).first->second);
  }
  formClasses();
  const size_t ranks = representative.size() * plan.stages;
  states.assign(ranks, State{});
  out.ranks.assign(ranks, SimRank{});
  out.perEvent.assign(events.size(), EventTotal{});
  std::vector<int64_t> likeIt(representative.size(), 0);
  for (int64_t c : classOf)
    ++likeIt[c];
  for (uint32_t x = 0; x < ranks; ++x) {
    SimRank &r = out.ranks[x];
    r.stage = x % plan.stages;
    r.replica = representative[x / plan.stages];
    r.device = deviceOf(r.stage, r.replica);
    r.likeIt = likeIt[x / plan.stages];
    ready.push_back(x);
  }
  size_t finished = 0;
  std::vector<bool> done(ranks, false);
  while (!ready.empty()) {
    uint32_t x = ready.front();
    ready.pop_front();
    if (done[x])
      continue;
    if (advance(x)) {
      done[x] = true;
      ++finished;
    }
  }
  if (finished < ranks) {
    for (uint32_t x = 0; x < ranks; ++x) {
      if (done[x])
        continue;
      const StageProgram &p = programOf(x);
      const Event &e = events[p.steps[states[x].pc].event];
      error = "the plan deadlocks: stage " + std::to_string(x % plan.stages) +
              " of replica " + std::to_string(out.ranks[x].replica) +
              " waits forever at step " + std::to_string(states[x].pc) +
              " of " + p.name + " (" + e.key() + ")";
      return false;
    }
  }
  double weighted = 0, count = 0;
  for (uint32_t x = 0; x < ranks; ++x)
    out.iterationSeconds = std::max(out.iterationSeconds, states[x].clock);
  for (uint32_t x = 0; x < ranks; ++x) {
    SimRank &r = out.ranks[x];
    r.endSeconds = states[x].clock;
    r.idleSeconds =
        std::max(0.0, out.iterationSeconds - r.computeSeconds - r.commSeconds);
    weighted += r.likeIt * r.idleSeconds;
    count += r.likeIt;
  }
  if (out.iterationSeconds > 0 && count > 0)
    out.bubbleFraction = weighted / count / out.iterationSeconds;
  return true;
}

} // namespace

bool simulate(const EventTable &events, const PlanShape &plan,
              const Topology &topology, const SimOptions &options,
              SimResult &out, std::string &error) {
  out = SimResult{};
  if (plan.stages < 1 || plan.replicas < 1 ||
      plan.grid.size() != size_t(plan.stages * plan.replicas) ||
      plan.programs.size() != size_t(plan.replicas)) {
    error = "the plan's grid does not match its stages and replicas";
    return false;
  }
  for (int64_t d : plan.grid)
    if (d < 0 || d >= static_cast<int64_t>(topology.devices.size())) {
      error = "the plan places a rank on device " + std::to_string(d) +
              ", which the cluster does not have";
      return false;
    }
  for (const ProgramSet *p : plan.programs)
    if (!p || p->stages.size() != size_t(plan.stages)) {
      error = "a replica has no program for every stage";
      return false;
    }
  return Replay(events, plan, topology, options, out).run(error);
}

} // namespace whale::sim
