#!/usr/bin/env bash
# Wall time and peak RSS of `mcc convert` on a model, as ratios to the model's size, for a pipeline
# (default 'fold,fp16'), next to `cp` of the same file as the floor.
# usage: bench/convert_bench.sh MODEL [PIPELINE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model="$1"
pipeline="${2:-fold,fp16}"
mcc="${MCC:-$root/build/mcc}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
size=$(stat -c %s "$model")
mb=$(awk -v s="$size" 'BEGIN{printf "%.1f", s/1048576}')

measure() {  # prints "seconds peak_kb"
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  cat "$tmp/time"
}

read -r cp_s cp_kb < <(measure cp "$model" "$tmp/copy.onnx")
read -r s kb < <(measure "$mcc" convert "$model" -o "$tmp/out.onnx" -p "$pipeline" -q)
out_size=$(stat -c %s "$tmp/out.onnx")
printf 'model %s: %s MB; pipeline %s\n' "$(basename "$model")" "$mb" "$pipeline"
printf '  mcc convert: %6.2f s  %7.1f MB/s  peak RSS %7.1f MB = %.2f x model size; output %.1f MB\n' \
  "$s" "$(awk -v s="$size" -v t="$s" 'BEGIN{print s/1048576/(t>0?t:1e-3)}')" "$(awk -v k="$kb" 'BEGIN{print k/1024}')" \
  "$(awk -v k="$kb" -v s="$size" 'BEGIN{print k*1024/s}')" "$(awk -v s="$out_size" 'BEGIN{print s/1048576}')"
printf '  cp (floor):  %6.2f s  peak RSS %7.1f MB\n' "$cp_s" "$(awk -v k="$cp_kb" 'BEGIN{print k/1024}')"
