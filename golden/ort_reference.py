#!/usr/bin/env python3
"""Makes a golden sample folder for any model with ONNX Runtime: seeded random inputs (floats
uniform in [0, 1), symbolic dims set to 1 unless given) and ORT's outputs, written as
OUT/sample_0/<input name>.npy and OUT/sample_0/output_K.npy, ready for `mcc eval MODEL --golden OUT`.

usage: golden/ort_reference.py MODEL OUT [--seed N] [--dim name=value ...]
"""
import argparse
import os

import numpy as np
import onnxruntime as ort

TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
         "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_,
         "tensor(uint8)": np.uint8, "tensor(int8)": np.int8}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dim", action="append", default=[])
    a = ap.parse_args()
    dims = dict(d.split("=") for d in a.dim)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(a.seed)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else int(dims.get(d, 1)) for d in i.shape]
        dt = TYPES[i.type]
        feeds[i.name] = rng.random(shape).astype(dt) if np.issubdtype(dt, np.floating) else np.zeros(shape, dt)
    d = os.path.join(a.out, "sample_0")
    os.makedirs(d, exist_ok=True)
    for k, v in feeds.items():
        np.save(os.path.join(d, k + ".npy"), v)
    for k, v in enumerate(sess.run(None, feeds)):
        np.save(os.path.join(d, "output_%d.npy" % k), v)


if __name__ == "__main__":
    main()
