#!/usr/bin/env python3
"""Runs two models (e.g. an original and its folded version) in ONNX Runtime on the same seeded
inputs (floats uniform in [0, 1), symbolic dims set to 1) and compares every output by cosine
similarity. Prints one line per output; exits 1 when any cosine is below the bar (or the outputs
differ in count, shape or dtype), 2 on a usage or load error.

usage: golden/ort_compare.py ORIGINAL CANDIDATE [--min-cosine 0.99999] [--seed N] [--inputs DIR]
(--inputs: a sample folder holding <input name>.npy, as in golden/<case>/<sample>/)
"""
import argparse
import os
import sys

import numpy as np
import onnxruntime as ort

TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
         "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_,
         "tensor(uint8)": np.uint8, "tensor(int8)": np.int8}


def session(path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    # No ORT graph optimizations: compare the models as written.
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("original")
    ap.add_argument("candidate")
    ap.add_argument("--min-cosine", type=float, default=0.99999)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--inputs", default=None)
    a = ap.parse_args()
    try:
        ref, cand = session(a.original), session(a.candidate)
    except Exception as e:  # noqa: BLE001 - any load failure is a usage error here
        print("ort_compare: cannot load: %s" % e, file=sys.stderr)
        return 2
    rng = np.random.default_rng(a.seed)
    feeds = {}
    for i in ref.get_inputs():
        if a.inputs and os.path.exists(os.path.join(a.inputs, i.name + ".npy")):
            feeds[i.name] = np.load(os.path.join(a.inputs, i.name + ".npy"))
            continue
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        dt = TYPES[i.type]
        feeds[i.name] = rng.random(shape).astype(dt) if np.issubdtype(dt, np.floating) else np.zeros(shape, dt)
    cand_inputs = {i.name for i in cand.get_inputs()}
    want = ref.run(None, feeds)
    got = cand.run(None, {k: v for k, v in feeds.items() if k in cand_inputs})
    if len(want) != len(got):
        print("ort_compare: %d outputs vs %d" % (len(want), len(got)))
        return 1
    ok = True
    for o, w, g in zip(ref.get_outputs(), want, got):
        w, g = np.asarray(w), np.asarray(g)
        if w.shape != g.shape or w.dtype != g.dtype:
            print("%s: shape/dtype %s %s vs %s %s" % (o.name, w.shape, w.dtype, g.shape, g.dtype))
            ok = False
            continue
        wf, gf = w.astype(np.float64).ravel(), g.astype(np.float64).ravel()
        nw, ng = np.linalg.norm(wf), np.linalg.norm(gf)
        cos = 1.0 if nw == 0 and ng == 0 else float(np.dot(wf, gf) / max(nw * ng, 1e-300))
        max_abs = float(np.max(np.abs(wf - gf))) if wf.size else 0.0
        passed = cos >= a.min_cosine
        ok = ok and passed
        print("%s: cosine %.9f max_abs %.3g %s" % (o.name, cos, max_abs, "pass" if passed else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
