#!/usr/bin/env bash
# Builds mcc and runs the whole test suite with ctest (labels: unit, cuda-emulated, roundtrip,
# conformance, gpu when nvidia-smi sees a GPU, and large when the disk has room), then prints the
# pass counts of each suite. Fuzzing is its own command, scripts/fuzz.sh (.ci/run runs both).
# MCC_TEST_LABELS="unit|roundtrip" restricts the labels (a ctest -L regex).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${MCC_BUILD_DIR:-$root/build}"

"$root/scripts/build.sh"

labels="${MCC_TEST_LABELS:-}"
if [ -z "$labels" ]; then
  labels="unit|cuda-emulated|roundtrip|conformance"
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
    labels="$labels|gpu"
  else
    echo "test: ==== the 'gpu' suite is NOT run: no GPU here (nvidia-smi absent or failing) ===="
  fi
  free_gb=$(df -Pk "$build" | awk 'NR==2 {print int($4 / 1048576)}')
  if [ "${free_gb:-0}" -ge 10 ]; then
    labels="$labels|large"
  else
    echo "test: skipping the 'large' suite: ${free_gb} GB free under $build (needs 10 GB)"
  fi
fi

status=0
(cd "$build" && ctest --output-on-failure --timeout 3600 -L "^($labels)\$") || status=$?

echo
echo "== pass counts per suite (doctest counts the cases of the other suites as 'skipped' here)"
log="$build/Testing/Temporary/LastTest.log"
if [ -f "$log" ]; then
  awk '/^[0-9]+\/[0-9]+ Test: /{name=$3} /\[doctest\] test cases:/{print "  " name ": " $0}
       /^docs: [0-9]+ (gpu )?blocks passed/{print "  " name ": " substr($0, 7)}' "$log" |
    sed 's/\[doctest\] //'
fi

exit "$status"
