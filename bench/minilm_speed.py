#!/usr/bin/env python3
"""MiniLM-L6 (all-MiniLM-L6-v2, seq 128) latency: mcc's cpu backend against ONNX Runtime.

Feeds one tokenized sample (input_ids, attention_mask, token_type_ids) to both runtimes at each
thread count, alternating mcc and ORT in rounds so machine load hits both alike, and prints medians,
the mcc/ORT ratio and the 1-minute load average before and after. --profile N adds mcc's per-op-type
breakdown. Needs the exported model and samples; it does not apply to other models.

usage: bench/minilm_speed.py [--threads 1 2] [--rounds 6] [--runs 10] [--profile 0]
       [--model /work/minilm/minilm_l6_v2.onnx] [--samples /work/shared/tools/minilm/samples] [--sample 00]
       [--baseline OTHER_MCC]   (a second mcc binary, e.g. an older build, timed in the same rounds)
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

import numpy as np
import onnxruntime as ort

from cpu_vs_ort import ort_times

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def mcc_times(mcc, model, d, threads, warmup, runs):
    r = subprocess.run([mcc, "bench", model, "--inputs", d, "--threads", str(threads), "--runs", str(runs),
                        "--warmup", str(warmup), "--json", "-q", "--raw"], capture_output=True, text=True,
                       check=True)
    return json.loads(r.stdout)["runs_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="/work/minilm/minilm_l6_v2.onnx")
    ap.add_argument("--samples", default="/work/shared/tools/minilm/samples")
    ap.add_argument("--sample", default="00")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--runs", type=int, default=10, help="timed runs per round and runtime")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--profile", type=int, default=0, help="also print mcc's top N op types")
    ap.add_argument("--mcc", default=os.path.join(ROOT, "build", "mcc"))
    ap.add_argument("--baseline", help="another mcc binary timed in the same rounds (column base_ms)")
    a = ap.parse_args()
    src = os.path.join(a.samples, a.sample)
    feeds = {k: np.load(os.path.join(src, k + ".npy")) for k in INPUTS}
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "s")
        os.makedirs(d)
        for k, v in feeds.items():
            np.save(os.path.join(d, k + ".npy"), v)
        print("model %s, sample %s, shape %s; %d rounds x %d runs (+%d warm-up) per runtime"
              % (a.model, a.sample, list(feeds["input_ids"].shape), a.rounds, a.runs, a.warmup))
        print("%7s %10s %10s %8s %10s %9s %14s" % ("threads", "mcc_ms", "ort_ms", "mcc/ort", "base_ms", "base/ort",
                                                 "load(1m) b/a"))
        for t in a.threads:
            so = ort.SessionOptions()
            so.intra_op_num_threads = t
            so.inter_op_num_threads = 1
            sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
            load0 = os.getloadavg()[0]
            mt, ot, bt = [], [], []
            for _ in range(a.rounds):
                ot += ort_times(sess, feeds, a.warmup, a.runs)
                mt += mcc_times(a.mcc, a.model, d, t, a.warmup, a.runs)
                if a.baseline:
                    bt += mcc_times(a.baseline, a.model, d, t, a.warmup, a.runs)
            load1 = os.getloadavg()[0]
            mm, om = float(np.median(mt)), float(np.median(ot))
            bm = float(np.median(bt)) if bt else float("nan")
            print("%7d %10.3f %10.3f %8.2f %10.3f %9.2f %7.2f/%.2f" % (t, mm, om, mm / om, bm, bm / om, load0, load1))
            if a.profile:
                r = subprocess.run([a.mcc, "bench", a.model, "--inputs", d, "--threads", str(t), "--runs",
                                    str(a.runs * 2), "--warmup", str(a.warmup), "--profile", str(a.profile)],
                                   capture_output=True, text=True, check=True)
                print(r.stdout)


if __name__ == "__main__":
    main()
