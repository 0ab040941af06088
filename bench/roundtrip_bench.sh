#!/usr/bin/env bash
# Round-trip benchmark (not a test): for each model in ../shared/models plus a generated ~1 GB
# inline model, times mcc_roundtrip (load_model + save_model, including fsync) against two floors:
# `cp` of the same file (in-kernel copy, no fsync) and `dd bs=4M conv=fsync` (user-space copy plus
# fsync, what a load+save must at least do), and reports MB/s and peak RSS / model size.
# Best of 3 runs, warm page cache.
# Goal: peak RSS <= 1.5x the model size, >= 500 MB/s.
#   usage: bench/roundtrip_bench.sh [more.onnx ...]     (env MCC_ROUNDTRIP=path/to/mcc_roundtrip)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="${MCC_ROUNDTRIP:-$root/build/mcc_roundtrip}"
[ -x "$bin" ] || { echo "build it first: scripts/build.sh mcc_roundtrip" >&2; exit 2; }
work=$(mktemp -d /tmp/mcc-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT

big=/tmp/mcc-bench-1g.onnx
if [ ! -f "$big" ]; then
  echo "generating $big (inline protobuf, ~1 GB) ..." >&2
  python3 - "$big" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
rng = np.random.default_rng(0)
n, width = 16, 4096  # 16 x 64 MiB f32 initializers
inits, nodes, prev = [], [], "X"
for i in range(n):
    w = rng.standard_normal((width, width), dtype=np.float32)
    inits.append(numpy_helper.from_array(w, f"W{i}"))
    nodes.append(helper.make_node("MatMul", [prev, f"W{i}"], [f"H{i}"], name=f"mm{i}"))
    prev = f"H{i}"
g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", width])],
                      [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["N", width])], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
fi

models=()
for m in "$root"/../shared/models/*.onnx; do [ -f "$m" ] && models+=("$m"); done
models+=("$big" "$@")

# run CMD...: prints "seconds peak_rss_kb" of the best (fastest) of 3 runs.
run() {
  local best="" rss=0
  for _ in 1 2 3; do
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -f "%M" -o "$work/rss" "$@" >/dev/null
    t1=$(date +%s%N)
    local dt=$(( t1 - t0 ))
    if [ -z "$best" ] || [ "$dt" -lt "$best" ]; then best=$dt; rss=$(cat "$work/rss"); fi
  done
  awk -v ns="$best" -v r="$rss" 'BEGIN { printf "%.4f %d\n", ns / 1e9, r }'
}

printf "%-36s %8s | %8s %8s %8s %8s | %8s %8s | %8s %8s\n" model "size MB" "mcc s" "mcc MB/s" "RSS MB" "RSS/size" \
  "cp s" "cp MB/s" "dd s" "dd MB/s"
for m in "${models[@]}"; do
  size=$(stat -c %s "$m")
  read -r ts rss < <(run "$bin" "$m" "$work/out.onnx")
  read -r tc _ < <(run cp "$m" "$work/cp.onnx")
  read -r td _ < <(run dd if="$m" of="$work/dd.onnx" bs=4M conv=fsync status=none)
  awk -v n="$(basename "$m")" -v s="$size" -v ts="$ts" -v rss="$rss" -v tc="$tc" -v td="$td" 'BEGIN {
    mb = s / 1e6
    printf "%-36s %8.1f | %8.3f %8.0f %8.1f %8.2f | %8.3f %8.0f | %8.3f %8.0f\n", n, mb, ts, mb / ts,
           rss / 1024, rss * 1024 / s, tc, mb / tc, td, mb / td }'
  rm -f "$work"/out.onnx* "$work/cp.onnx" "$work/dd.onnx"
done
