#!/usr/bin/env python3
"""Cost of `mcc quantize` and speed of its INT8 models, on YOLOX-nano with COCO photos. Prints one table.

  calibration time   wall time of `mcc quantize --calib` on N photos vs N x one fp32 inference on
                     mcc's cpu backend (`mcc bench` median, same threads): calibration runs the model
                     once per sample, so the ratio says what the statistics and the rewrite cost.
  calibration memory peak RSS (/usr/bin/time -v) with 5 photos vs 20: statistics stream sample by
                     sample, so memory must stay flat; bar: ratio <= 1.25.
  int8 latency       the QDQ model vs the fp32 model under ONNX Runtime (CPU EP, same thread count,
                     graph optimizations on so QDQ runs as int8 kernels): median of --runs runs after
                     warm-up, the two models alternating in rounds so machine noise hits both.

usage: bench/quant_bench.py [--mcc build/mcc] [--shared ../shared] [--work DIR] [--threads N] [--runs N]
                            [--models yolox,mobilenet,mnist]
Needs: numpy, onnxruntime, pillow; /usr/bin/time (GNU time).
"""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

from common import print_table, run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def peak_rss_mb(cmd):
    p, secs = run(["/usr/bin/time", "-v", *cmd])
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    return int(m.group(1)) / 1024.0, secs


def yolox_samples(args, work, n_calib_list, n_eval):
    alld = os.path.join(work, "coco_yolox_all")
    need = max(n_calib_list) + n_eval
    if not os.path.isdir(alld) or len(os.listdir(alld)) < need:
        run([sys.executable, os.path.join(args.shared, "tools", "coco_to_yolox_samples.py"), alld, str(need)])
    names = sorted(os.listdir(alld))
    dirs = {}
    for n in n_calib_list:
        d = os.path.join(work, f"bench_calib{n}")
        if not os.path.isdir(d):
            os.makedirs(d)
            for nme in names[:n]:
                shutil.copytree(os.path.join(alld, nme), os.path.join(d, nme))
        dirs[n] = d
    return dirs, os.path.join(alld, names[-1])


def ort_latency(fp32, int8, feeds, threads, runs):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    sess = {k: ort.InferenceSession(p, so, providers=["CPUExecutionProvider"]) for k, p in (("fp32", fp32), ("int8", int8))}
    times = {k: [] for k in sess}
    for s in sess.values():
        for _ in range(3):
            s.run(None, feeds)
    for _ in range(runs):  # alternate so drift and neighbours' load hit both models alike
        for k, s in sess.items():
            t0 = time.perf_counter()
            s.run(None, feeds)
            times[k].append(1000 * (time.perf_counter() - t0))
    return {k: float(np.median(v)) for k, v in times.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mcc", default=os.path.join(ROOT, "build", "mcc"))
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    ap.add_argument("--work", default="")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--models", default="yolox,mobilenet,mnist")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="mcc-quant-bench-")
    os.makedirs(work, exist_ok=True)
    t = str(args.threads)
    rows = []
    yolox = os.path.join(args.shared, "models", "yolox_nano.onnx")
    dirs, one = yolox_samples(args, work, [5, 20], 1)

    # Calibration wall time vs samples x one fp32 inference (mcc cpu backend).
    p, _ = run([args.mcc, "bench", yolox, "--inputs", one, "--threads", t, "--runs", "10", "--json"])
    infer_ms = json.loads(p.stdout)["median_ms"]
    q = {}
    rss = {}
    for n, d in sorted(dirs.items()):
        q[n] = os.path.join(work, f"yolox_q{n}.onnx")
        rss[n], secs = peak_rss_mb([args.mcc, "quantize", yolox, "-o", q[n], "--calib", d, "--threads", t])
        ratio = secs / (n * infer_ms / 1000.0)
        rows.append(("YOLOX-nano", f"calibrate + quantize, {n} photos", f"{secs:.2f} s",
                     f"{n} x {infer_ms:.1f} ms = {n * infer_ms / 1000:.2f} s", f"ratio {ratio:.2f}", ""))
    r = rss[20] / rss[5]
    rows.append(("YOLOX-nano", "peak RSS, 5 vs 20 photos", f"{rss[5]:.0f} / {rss[20]:.0f} MiB", "ratio <= 1.25",
                 f"ratio {r:.3f}", "met" if r <= 1.25 else "NOT met"))

    # INT8 vs fp32 latency under ONNX Runtime.
    feeds = {"images": np.load(os.path.join(one, "images.npy"))}
    lat = ort_latency(yolox, q[20], feeds, args.threads, args.runs)
    rows.append(("YOLOX-nano", f"ORT latency fp32 / int8 ({t} thr, median)", f"{lat['fp32']:.2f} / {lat['int8']:.2f} ms",
                 "", f"int8 x{lat['fp32'] / lat['int8']:.2f} speed", ""))
    for name in args.models.split(","):
        if name == "yolox":
            continue
        if name == "mobilenet":
            model = os.path.join(args.shared, "models", "mobilenet_v2_random_bn_opset13.onnx")
            rng = np.random.default_rng(0)
            feeds_list = [{"input": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)} for _ in range(8)]
        elif name == "mnist":
            model = os.path.join(args.shared, "models", "mnist.onnx")
            x = np.load(os.path.join(args.shared, "data", "mnist", "x.npy"))
            feeds_list = [{"Input3": x[i:i + 1]} for i in range(100)]
        else:
            sys.exit(f"unknown model {name}")
        calib = os.path.join(work, f"bench_{name}_calib")
        for i, f in enumerate(feeds_list):
            os.makedirs(os.path.join(calib, f"s{i:03d}"), exist_ok=True)
            for k, v in f.items():
                np.save(os.path.join(calib, f"s{i:03d}", k + ".npy"), v)
        qm = os.path.join(work, f"{name}_q.onnx")
        _, secs = run([args.mcc, "quantize", model, "-o", qm, "--calib", calib, "--threads", t])
        lat = ort_latency(model, qm, feeds_list[0], args.threads, args.runs)
        rows.append((name, f"ORT latency fp32 / int8 ({t} thr, median)", f"{lat['fp32']:.3f} / {lat['int8']:.3f} ms",
                     "", f"int8 x{lat['fp32'] / lat['int8']:.2f} speed", ""))
    print_table(f"onnxruntime {ort.__version__}, {args.threads} thread(s), {args.runs} runs, work dir {work}",
                ("model", "measure", "value", "reference", "ratio", "verdict"), rows)


if __name__ == "__main__":
    main()
