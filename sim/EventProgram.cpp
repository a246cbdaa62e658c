//===- EventProgram.cpp - events and their table --------------------------===//

#include "sim/EventProgram.h"

namespace whale::sim {

const char *groupName(GroupKind g) {
  switch (g) {
  case GroupKind::Replicas:
    return "replicas";
  case GroupKind::Stages:
    return "stages";
  case GroupKind::ShardPeers:
    return "shard_peers";
  case GroupKind::ShardGroup:
    return "shard_group";
  }
  return "group";
}

std::string Event::key() const {
  std::string k = op + " " + signature;
  if (kind == StepKind::Collective)
    k += std::string(" over ") + groupName(group) +
         (shards ? "(" + std::to_string(shards) + ")" : "") +
         (sharding ? " in groups of " + std::to_string(sharding) : "");
  return k;
}

uint32_t EventTable::intern(Event e) {
  std::string k = e.key();
  auto it = index.find(k);
  if (it != index.end())
    return it->second;
  uint32_t i = static_cast<uint32_t>(events.size());
  events.push_back(std::move(e));
  index.emplace(std::move(k), i);
  return i;
}

} // namespace whale::sim
