#!/usr/bin/env python3
"""Checks a pruned model against its original under ONNX Runtime: the pruned model passes the ONNX
checker and strict shape inference, both run on the same seeded inputs (uniform [0, 1)), and every
output differs by at most --atol. Exits 0 when it holds, 1 when it does not, 2 on a load error.

usage: prune_ort_check.py ORIGINAL PRUNED [--atol 1e-5] [--seed N]
"""
import argparse
import sys

import numpy as np
import onnx
import onnxruntime as ort


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("original")
    ap.add_argument("pruned")
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    try:
        m = onnx.load(a.pruned)
        onnx.checker.check_model(m)
        onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        ref = ort.InferenceSession(a.original, so, providers=["CPUExecutionProvider"])
        cand = ort.InferenceSession(a.pruned, so, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - any load failure is exit 2
        print(f"prune_ort_check: {e}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(a.seed)
    feeds = {i.name: rng.random([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
             for i in ref.get_inputs()}
    x, y = ref.run(None, feeds), cand.run(None, feeds)
    worst = 0.0
    for o, p in zip(x, y):
        if o.shape != p.shape:
            print(f"shape {o.shape} != {p.shape}")
            return 1
        worst = max(worst, float(np.max(np.abs(o - p))) if o.size else 0.0)
    print(f"max_abs_diff {worst:.3g}")
    return 0 if worst <= a.atol else 1


if __name__ == "__main__":
    sys.exit(main())
