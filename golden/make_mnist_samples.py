#!/usr/bin/env python3
"""Writes the bundled MNIST calibration and evaluation digits used by scripts/demo.sh.

From ../shared/data/mnist/x.npy (f32 [10000,1,28,28], values 0..1) and y.npy (i64 [10000]):
  golden/mnist/calib/digit_NNNNN/Input3.npy   100 digits: every 100th, from 0 (calibration for mcc quantize)
  golden/mnist/eval/digit_NNNNN/Input3.npy    500 digits: every 20th, from 10 (none used for calibration)
  golden/mnist/eval_labels.txt                their labels, one per line, in the sorted folder order
x.npy is sorted by class (its first 1001 digits are all 0s), so the digits are taken at a stride:
both sets then hold every class in its share of the data. Each Input3.npy is f32 [1,1,28,28];
NNNNN is the zero-padded index into x.npy, so the sorted folder order (the order mcc lists samples
in) is the index order. Output folders are replaced as a whole.
Run from anywhere:  python3 golden/make_mnist_samples.py [--shared ../shared]   (needs numpy)
"""
import argparse
import os
import shutil

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CALIB = range(0, 10000, 100)
EVAL = range(10, 10000, 20)


def write_digits(folder, x, indices):
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    for i in indices:
        d = os.path.join(folder, "digit_%05d" % i)
        os.makedirs(d)
        np.save(os.path.join(d, "Input3.npy"), np.ascontiguousarray(x[i:i + 1], dtype=np.float32))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(HERE, "..", "..", "shared"))
    a = ap.parse_args()
    data = os.path.join(a.shared, "data", "mnist")
    x = np.load(os.path.join(data, "x.npy"))
    y = np.load(os.path.join(data, "y.npy"))
    assert x.shape[1:] == (1, 28, 28) and x.dtype == np.float32, x.shape
    assert y.shape == (x.shape[0],), y.shape

    mnist = os.path.join(HERE, "mnist")
    write_digits(os.path.join(mnist, "calib"), x, CALIB)
    write_digits(os.path.join(mnist, "eval"), x, EVAL)
    with open(os.path.join(mnist, "eval_labels.txt"), "w") as f:
        f.write("# labels of golden/mnist/eval/digit_NNNNN (y.npy[NNNNN]), in sorted folder order\n")
        for i in EVAL:
            f.write("%d\n" % int(y[i]))
    print("mnist: %d calibration digits, %d evaluation digits with labels" % (len(CALIB), len(EVAL)))


if __name__ == "__main__":
    main()
