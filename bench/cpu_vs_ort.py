#!/usr/bin/env python3
"""cpu backend latency against ONNX Runtime, side by side in one run.

For each model: the same inputs (the first golden sample, or seeded random inputs), the same
thread count, the same warm-up and run counts; mcc through `mcc bench --json`, ONNX Runtime
through its Python API with all graph optimisations on (its default). Prints medians, p90s and
the ratio mcc/ORT (below 1 = mcc faster).

usage: bench/cpu_vs_ort.py [--threads N] [--runs N] [--warmup N] [--mcc build/mcc] [MODEL ...]
Default models: golden/*/model.onnx and ../shared/models/*.onnx.
"""
import argparse
import glob
import json
import os
import subprocess
import tempfile
import time

import numpy as np
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NP_TYPES = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
            "tensor(double)": np.float64, "tensor(float16)": np.float16, "tensor(bool)": np.bool_,
            "tensor(uint8)": np.uint8, "tensor(int8)": np.int8}
KNOWN_DIMS = {"batch": 1, "seq": 512, "N": 1}


def inputs_for(model, sess, tmp):
    """The first golden sample when the model is a golden case, else seeded random inputs."""
    case_dir = os.path.dirname(model)
    samples = sorted(d for d in glob.glob(os.path.join(case_dir, "*")) if os.path.isdir(d))
    feeds = {}
    if samples and os.path.abspath(case_dir).startswith(os.path.join(ROOT, "golden")):
        for i in sess.get_inputs():
            feeds[i.name] = np.load(os.path.join(samples[0], i.name + ".npy"))
    else:
        rng = np.random.default_rng(0)
        for i in sess.get_inputs():
            shape = [d if isinstance(d, int) else KNOWN_DIMS.get(d, 1) for d in i.shape]
            if i.name == "sr":
                feeds[i.name] = np.array(16000, np.int64)
                continue
            dt = NP_TYPES[i.type]
            feeds[i.name] = (rng.random(shape) * 2 - 1).astype(dt) if dt in (np.float32, np.float64, np.float16) \
                else np.zeros(shape, dt)
    d = os.path.join(tmp, os.path.basename(case_dir) + "_" + os.path.basename(model).replace(".onnx", ""))
    os.makedirs(d, exist_ok=True)
    for k, v in feeds.items():
        np.save(os.path.join(d, k + ".npy"), v)
    return feeds, d


def ort_times(sess, feeds, warmup, runs):
    for _ in range(warmup):
        sess.run(None, feeds)
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        ts.append((time.perf_counter() - t0) * 1000)
    return ts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=4, help="alternate mcc and ORT this many times")
    ap.add_argument("--mcc", default=os.path.join(ROOT, "build", "mcc"))
    a = ap.parse_args()
    models = a.models
    if not models:
        models = sorted(glob.glob(os.path.join(ROOT, "golden", "*", "model.onnx")))
        seen = {open(m, "rb").read() for m in models}
        # ../shared models not already bundled in golden/ (same bytes), with seeded random inputs.
        models += [m for m in sorted(glob.glob(os.path.join(ROOT, "..", "shared", "models", "*.onnx")))
                   if open(m, "rb").read() not in seen]
    print("threads=%d warmup=%d runs=%d (median/p90 in ms)" % (a.threads, a.warmup, a.runs))
    print("%-48s %10s %10s %10s %10s %8s" % ("model", "mcc_med", "mcc_p90", "ort_med", "ort_p90", "mcc/ort"))
    with tempfile.TemporaryDirectory() as tmp:
        for m in models:
            so = ort.SessionOptions()
            so.intra_op_num_threads = a.threads
            so.inter_op_num_threads = 1
            sess = ort.InferenceSession(m, so, providers=["CPUExecutionProvider"])
            feeds, d = inputs_for(m, sess, tmp)
            # Alternate the two runtimes in rounds so load on the machine hits both alike.
            mcc_ts, ort_ts, failed = [], [], None
            per_round = max(1, a.runs // a.rounds)
            for _ in range(a.rounds):
                ort_ts += ort_times(sess, feeds, a.warmup, per_round)
                r = subprocess.run([a.mcc, "bench", m, "--inputs", d, "--threads", str(a.threads), "--runs",
                                    str(per_round), "--warmup", str(a.warmup), "--json", "-q", "--raw"],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    failed = "mcc failed (exit %d): %s" % (r.returncode, r.stderr.strip().splitlines()[-1:])
                    break
                mcc_ts += json.loads(r.stdout)["runs_ms"]
            name = os.path.relpath(m, ROOT)
            if failed:
                print("%-48s %s" % (name, failed))
                continue
            mm, mp90 = float(np.median(mcc_ts)), float(np.percentile(mcc_ts, 90))
            om, op90 = float(np.median(ort_ts)), float(np.percentile(ort_ts, 90))
            print("%-48s %10.3f %10.3f %10.3f %10.3f %8.2f" % (name, mm, mp90, om, op90, mm / om))


if __name__ == "__main__":
    main()
