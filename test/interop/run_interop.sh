#!/usr/bin/env bash
# Runs an interop check with the build's reference clients
# (WHALE_INTEROP_PYTHON, made by scripts/interop-env.sh). Their absence is
# a failure, not a skip, unless WHALE_NO_INTEROP=1.
set -euo pipefail
if [ "${WHALE_NO_INTEROP:-0}" = 1 ]; then
  echo "skipped: WHALE_NO_INTEROP=1"
  exit 77
fi
python="${WHALE_INTEROP_PYTHON:-}"
if [ -z "$python" ] || [ ! -x "$python" ]; then
  echo "no reference clients at '$python': run scripts/interop-env.sh BUILD_DIR (scripts/test.sh does)" >&2
  exit 1
fi
exec "$python" "$@"
