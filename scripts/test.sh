#!/usr/bin/env bash
# Builds Whale and runs every test: the lit suite (passes, dialect, language,
# diagnostics, examples, fuzz-corpus replay) and the unit tests, through
# ctest; then the parts without MLIR again under ASan+UBSan
# (scripts/sanitize.sh; WHALE_NO_SANITIZE=1 skips it).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/build.sh"
(cd "$root/build" && ctest --output-on-failure -j"$(nproc)" "$@")
if [ -z "${WHALE_NO_SANITIZE:-}" ]; then
  "$root/scripts/sanitize.sh"
fi
