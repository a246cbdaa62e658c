//===- Collectives.cpp - the alpha-beta models ----------------------------===//

#include "sim/Collectives.h"

#include <algorithm>
#include <cmath>

namespace whale::sim {

const char *collectiveName(Collective c) {
  switch (c) {
  case Collective::AllReduce:
    return "all_reduce";
  case Collective::AllGather:
    return "all_gather";
  case Collective::ReduceScatter:
    return "reduce_scatter";
  case Collective::AllToAll:
    return "all_to_all";
  case Collective::Broadcast:
    return "broadcast";
  case Collective::SendRecv:
    return "send_recv";
  }
  return "collective";
}

double collectiveSeconds(Collective c, Algorithm algorithm, double bytes,
                         int64_t ranks, const Link &link) {
  const double n = static_cast<double>(std::max<int64_t>(ranks, 1));
  const double a = link.latency;
  // A link of no declared bandwidth moves data for free: only its latency
  // is priced (the in-process communicator's plans without a cluster file).
  auto transfer = [&](double b) {
    return link.bandwidth > 0 ? b / link.bandwidth : 0.0;
  };
  if (c == Collective::SendRecv)
    return a + transfer(bytes);
  if (n <= 1)
    return 0;
  const double depth = std::ceil(std::log2(n));
  switch (c) {
  case Collective::AllReduce:
    if (algorithm == Algorithm::Tree)
      return 2 * depth * a + 2 * transfer(bytes);
    return 2 * (n - 1) * (a + transfer(bytes / n));
  case Collective::Broadcast:
    return depth * a + transfer(bytes);
  case Collective::AllGather:
  case Collective::ReduceScatter:
  case Collective::AllToAll:
    return (n - 1) * (a + transfer(bytes / n));
  case Collective::SendRecv:
    break;
  }
  return 0;
}

Algorithm bestAlgorithm(Collective c, double bytes, int64_t ranks,
                        const Link &link) {
  if (c != Collective::AllReduce)
    return c == Collective::Broadcast ? Algorithm::Tree : Algorithm::Ring;
  return collectiveSeconds(c, Algorithm::Tree, bytes, ranks, link) <
                 collectiveSeconds(c, Algorithm::Ring, bytes, ranks, link)
             ? Algorithm::Tree
             : Algorithm::Ring;
}

} // namespace whale::sim
