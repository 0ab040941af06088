#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (ASan + UBSan, clang) into build-fuzz, generates their
# seed corpora (fuzz/make_corpora.py) and runs each target for SECONDS_PER_TARGET (default 60),
# one worker each, then prints executions and findings per target. Exit 0 only when every target
# ran and found nothing; 1 on a finding (crash, sanitizer report, leak, timeout, out-of-memory;
# the input is kept under build-fuzz/findings/<target>/) and 2 when clang or libFuzzer is missing
# (never a silent pass: scripts/setup.sh installs them).
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default: MCC_FUZZ_SECONDS, else 60)
#   MCC_FUZZ_TARGETS="npy sidecar"  runs only these targets
#   MCC_FUZZ_BUILD_DIR              the build folder (default: build-fuzz next to build/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds="${1:-${MCC_FUZZ_SECONDS:-60}}"
build="${MCC_FUZZ_BUILD_DIR:-$root/build-fuzz}"
targets=(${MCC_FUZZ_TARGETS:-onnx_model npy tensor_pb sidecar pipeline_spec pipeline_file})

# Per target: -max_len (bytes) and the dictionary, if any.
declare -A max_len=([onnx_model]=65536 [npy]=4096 [tensor_pb]=65536 [sidecar]=16384
                    [pipeline_spec]=1024 [pipeline_file]=4096)
declare -A dict=([npy]=npy.dict [sidecar]=sidecar.dict [pipeline_spec]=pipeline.dict
                 [pipeline_file]=pipeline.dict)

fail_missing() {
  echo "fuzz: ==== NOT RUN: $1 ====" >&2
  echo "fuzz: install it (scripts/setup.sh does: apt-get install clang libclang-rt-14-dev)" >&2
  exit 2
}
command -v clang++ >/dev/null 2>&1 || fail_missing "clang++ is not installed"
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' >"$probe/p.cpp"
clang++ -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" 2>"$probe/err" ||
  fail_missing "clang++ cannot link a libFuzzer target ($(head -c 300 "$probe/err"))"

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DMCC_FUZZ=ON \
    -DMCC_WITH_CUDA=OFF -DMCC_NATIVE=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
exec 9>"${build}.lock"
flock 9
if ! ninja -C "$build" "${targets[@]/#/fuzz_}" >"$build/fuzz-build.log" 2>&1; then
  grep -m 10 -E "error|FAILED" "$build/fuzz-build.log" >&2 || true
  echo "fuzz: ==== the fuzz targets did not build (log: $build/fuzz-build.log) ====" >&2
  exit 1
fi
tail -n 1 "$build/fuzz-build.log"

python3 "$root/fuzz/make_corpora.py" "$build/seeds" >/dev/null
scratch="${MCC_FUZZ_SCRATCH_BASE:-/dev/shm}"
[ -d "$scratch" ] || scratch="${TMPDIR:-/tmp}"
export MCC_FUZZ_SCRATCH
MCC_FUZZ_SCRATCH=$(mktemp -d "$scratch/mcc-fuzz.XXXXXX")
trap 'rm -rf "$probe" "$MCC_FUZZ_SCRATCH"' EXIT
# Leaks are findings; symbolized stacks for the reports.
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:${UBSAN_OPTIONS:-}"

status=0
summary=()
for t in "${targets[@]}"; do
  bin="$build/fuzz/fuzz_$t"
  [ -x "$bin" ] || { echo "fuzz: $t: no binary $bin" >&2; status=1; summary+=("$t: NOT BUILT"); continue; }
  corpus="$build/corpus/$t"
  findings="$build/findings/$t"
  mkdir -p "$corpus" "$findings" "$build/seeds/$t"
  args=(-max_total_time="$seconds" -max_len="${max_len[$t]}" -timeout=5 -rss_limit_mb=2048
        -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix="$findings/")
  [ -n "${dict[$t]:-}" ] && args+=(-dict="$root/fuzz/${dict[$t]}")
  log="$build/findings/$t.log"
  before=$(find "$findings" -maxdepth 1 -type f | wc -l)
  rc=0
  "$bin" "${args[@]}" "$corpus" "$build/seeds/$t" >"$log" 2>&1 || rc=$?
  execs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log" | tail -n 1)
  after=$(find "$findings" -maxdepth 1 -type f | wc -l)
  new=$((after - before))
  line="$t: ${execs:-?} executions, $((new)) findings"
  if [ "$rc" -ne 0 ] || [ "$new" -gt 0 ]; then
    status=1
    line="$line (exit $rc; log $log; inputs in $findings/)"
    grep -m 3 -E "ERROR: |FUZZ FINDING|runtime error" "$log" | sed 's/^/    /' >&2 || true
  fi
  echo "fuzz: $line"
  summary+=("$line")
done

echo
echo "== fuzz: ${seconds} s per target"
printf '  %s\n' "${summary[@]}"
exit "$status"
