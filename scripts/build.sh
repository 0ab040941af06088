#!/usr/bin/env bash
# Configures (once) and builds mcc into ./build. Serialised with a lock so concurrent builds of
# the same tree do not collide. Extra arguments are passed to ninja (e.g. target names).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${MCC_BUILD_DIR:-$root/build}"
exec 9>"${build}.lock"
flock 9
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
ninja -C "$build" -k 0 "$@"
