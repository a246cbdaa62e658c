#!/usr/bin/env bash
# Builds Whale and runs every test: the lit suite (passes, dialect, language,
# diagnostics, examples, fuzz-corpus replay) and the unit tests, through
# ctest. Ends with ctest's summary line.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/build.sh"
cd "$root/build"
ctest --output-on-failure -j"$(nproc)" "$@"
