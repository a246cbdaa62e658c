#!/usr/bin/env bash
# Builds Whale and runs it. Without arguments: the showcase, the GPT example
# compiled to the whale dialect with the cost model's numbers on each
# TaskGraph. With arguments: `whale ARGS...`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/build.sh" >&2
if [ $# -eq 0 ]; then
  set -- compile "$root/examples/gpt.whl" --emit=whale --annotate-cost
fi
exec "$root/build/bin/whale" "$@"
