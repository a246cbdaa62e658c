//===- BatchRows.h - which rows of the global batch each replica reads ----===//
//
// The replicas of a stage read the global batch's rows in order: replica r
// takes local[r] rows after those of the replicas before it. Under
// split_rows = "whole" the c ranks of a shard group read the same rows, so
// `rowGroup` consecutive replicas share one slice, which counts once. One
// reading for both drivers (whale run, whale-exec) and the sample log.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_RUN_BATCHROWS_H
#define WHALE_RUNTIME_RUN_BATCHROWS_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace whale {

/// The first row of the global batch that `replica` reads.
inline int64_t firstRowOf(const std::vector<int64_t> &local, int64_t rowGroup,
                          int64_t replica) {
  const int64_t group = rowGroup > 1 ? rowGroup : 1;
  int64_t row = 0;
  for (int64_t q = 0; q < replica - replica % group; q += group)
    row += local[static_cast<size_t>(q)];
  return row;
}

/// The rows of each data-parallel replica (one per row group), in order:
/// they add up to the global batch.
inline std::vector<int64_t> dataReplicaRows(const std::vector<int64_t> &local,
                                            int64_t rowGroup) {
  const size_t group = rowGroup > 1 ? static_cast<size_t>(rowGroup) : 1;
  std::vector<int64_t> rows;
  for (size_t q = 0; q < local.size(); q += group)
    rows.push_back(local[q]);
  return rows;
}

} // namespace whale

#endif
