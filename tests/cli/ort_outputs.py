#!/usr/bin/env python3
"""Adds ONNX Runtime's outputs to every sample folder of DIR: DIR/<sample>/output_K.npy for MODEL
run on DIR/<sample>/<input name>.npy (CPU provider, one thread, graph optimizations off), so that
`mcc eval MODEL --golden DIR` compares with ORT on real inputs.

usage: tests/cli/ort_outputs.py MODEL DIR      (needs numpy and onnxruntime)
"""
import os
import sys

import numpy as np
import onnxruntime as ort


def main():
    model, data = sys.argv[1], sys.argv[2]
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    samples = sorted(d for d in os.listdir(data) if os.path.isdir(os.path.join(data, d)))
    for s in samples:
        d = os.path.join(data, s)
        feeds = {n: np.load(os.path.join(d, n + ".npy")) for n in names}
        for k, out in enumerate(sess.run(None, feeds)):
            np.save(os.path.join(d, "output_%d.npy" % k), out)
    print("%d sample(s) in %s" % (len(samples), data))


if __name__ == "__main__":
    main()
