//===- Collectives.h - time of a collective over a topology -----*- C++ -*-===//
//
// The alpha-beta model of each collective algorithm: a message of b bytes
// over a link costs latency + b / bandwidth, and an algorithm is a number
// of such steps. A group whose ranks sit in several nodes moves at the pace
// of its slowest link (the inter-node network); a group inside one node at
// its intra-node link's.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SIM_COLLECTIVES_H
#define WHALE_SIM_COLLECTIVES_H

#include <cstdint>
#include <string>

namespace whale::sim {

struct Link {
  double bandwidth = 0; ///< bytes/s per direction
  double latency = 0;   ///< seconds per message
};

enum class Collective {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Broadcast,
  SendRecv,
};

enum class Algorithm { Ring, Tree };

const char *collectiveName(Collective c);

/// Seconds of `c` over `ranks` ranks joined by `link` under `algorithm`.
/// `bytes` is the size of the whole tensor: what each rank contributes to an
/// all-reduce, the gathered result of an all-gather, the input of a
/// reduce-scatter, a rank's whole send buffer of an all-to-all, the message
/// of a send/recv or broadcast.
///
///   ring all-reduce   2 (n-1) (latency + bytes / (n bandwidth))
///   tree all-reduce   2 ceil(log2 n) latency + 2 bytes / bandwidth
///                     (a pipelined reduce up and broadcast down)
///   all-gather, reduce-scatter, all-to-all (ring)
///                     (n-1) (latency + bytes / (n bandwidth))
///   broadcast (tree)  ceil(log2 n) latency + bytes / bandwidth
///   send/recv         latency + bytes / bandwidth
double collectiveSeconds(Collective c, Algorithm algorithm, double bytes,
                         int64_t ranks, const Link &link);

/// The faster algorithm for `c` (what NCCL's tuner picks between ring and
/// tree): tree wins small all-reduces over many ranks, ring large ones.
Algorithm bestAlgorithm(Collective c, double bytes, int64_t ranks,
                        const Link &link);

} // namespace whale::sim

#endif
