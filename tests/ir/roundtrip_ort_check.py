#!/usr/bin/env python3
"""Round trip through the CLI, judged by ONNX Runtime: every .onnx under the given folders goes
through `mcc convert IN -o OUT` (no pipeline); where ONNX Runtime loads the input, it must load
the output too, and run it to the same outputs as the input on the model's test data (the first
folder of input_*.pb beside it, test_data_set_0 in the ONNX layout) or, without test data, on
seeded random inputs.

Run by tests/ir/roundtrip_test.cpp (roundtrip suite), whose other cases compare load → save
through the library as protobuf messages; this one goes through the command line, which verifies
the model and may run stages, and catches files that compare equal enough yet that ONNX Runtime
refuses. Models mcc refuses (exit 3 or 4) are counted and listed, not failed: the C++ cases hold
them to load. Models with non-tensor inputs and no test data, and models whose input does not
run in ONNX Runtime, are load-checked only.

Prints the counts and a closing `N passed, N failed` line; exit 1 on any failure, 77 (skipped,
said loudly) when python's onnx, onnxruntime or numpy is missing.
Usage: roundtrip_ort_check.py --mcc BUILD/mcc [--jobs 2] DIR...
"""
import argparse
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
except ImportError as e:
    print(f"*** roundtrip_ort_check: python's onnx/onnxruntime/numpy are NOT available ({e}); "
          "the round trip through ONNX Runtime is SKIPPED (scripts/setup.sh installs them) ***")
    sys.exit(77)

ort.set_default_logger_severity(4)  # the input models' own load/run errors are counted, not logged
NP_TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
            "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int16)": np.int16,
            "tensor(int8)": np.int8, "tensor(uint8)": np.uint8, "tensor(uint16)": np.uint16,
            "tensor(uint32)": np.uint32, "tensor(uint64)": np.uint64, "tensor(bool)": np.bool_}


def session(path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 4
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def test_inputs(model_path, sess):
    """Feeds from the first test data folder beside the model (test_data_set_0/input_*.pb), else seeded random tensors; None if neither."""
    sets = sorted(d for d in model_path.parent.iterdir() if d.is_dir() and (d / "input_0.pb").is_file())
    data = sets[0] if sets else None
    names = [i.name for i in sess.get_inputs()]
    if data:
        files = sorted(data.glob("input_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
        if len(files) == len(names):
            feeds = {}
            for name, f in zip(names, files):
                t = onnx.TensorProto()
                try:
                    t.ParseFromString(f.read_bytes())
                    feeds[name] = numpy_helper.to_array(t)
                except Exception:  # noqa: BLE001  (sequence/optional/map test data)
                    return None
            return feeds
    rng = np.random.default_rng(1234)
    feeds = {}
    for i in sess.get_inputs():
        dt = NP_TYPES.get(i.type)
        if dt is None:
            return None
        shape = [d if isinstance(d, int) and d >= 0 else 1 for d in (i.shape or [])]
        if dt == np.bool_:
            feeds[i.name] = rng.integers(0, 2, shape).astype(dt)
        elif np.issubdtype(dt, np.integer):
            feeds[i.name] = rng.integers(0, 3, shape).astype(dt)
        else:
            feeds[i.name] = rng.uniform(-1, 1, shape).astype(dt)
    return feeds


def same(a, b, tol):
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b) and \
            all(same(x, y, tol) for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if tol == 0:
        return a.dtype.kind not in "fc" and np.array_equal(a, b) or \
            a.dtype.kind in "fc" and np.array_equal(a, b, equal_nan=True)
    return a.dtype.kind not in "fc" or np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True)


def check(args):
    """(model, verdict, detail) for one model."""
    mcc, model = args
    model = Path(model)
    try:
        s_in = session(model)
    except Exception:  # noqa: BLE001
        return str(model), "input not loadable", ""
    tmp = Path(tempfile.mkdtemp(prefix="mcc-rt-ort-"))
    try:
        out = tmp / "out.onnx"
        r = subprocess.run([mcc, "-q", "convert", str(model), "-o", str(out)], capture_output=True,
                           text=True, timeout=300)
        if r.returncode in (3, 4):
            return str(model), "refused by mcc", r.stderr.strip().splitlines()[-1][:200] if r.stderr else ""
        if r.returncode != 0:
            return str(model), "FAIL mcc", f"exit {r.returncode}: {r.stderr.strip()[-300:]}"
        try:
            s_out = session(out)
        except Exception as e:  # noqa: BLE001
            return str(model), "FAIL output not loadable", str(e).splitlines()[0][:300]
        feeds = test_inputs(model, s_in)
        if feeds is None:
            return str(model), "loaded, no inputs", ""
        try:
            want = s_in.run(None, feeds)
        except Exception:  # noqa: BLE001
            return str(model), "loaded, input does not run", ""
        try:
            got = s_out.run(None, feeds)
        except Exception as e:  # noqa: BLE001
            return str(model), "FAIL output does not run", str(e).splitlines()[0][:300]
        if same(want, got, 0):
            return str(model), "identical", ""
        if same(want, got, 1e-6):
            return str(model), "close (1e-6)", ""
        return str(model), "FAIL outputs differ", ""
    except subprocess.TimeoutExpired:
        return str(model), "FAIL mcc timeout", ""
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mcc", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    models = []
    for d in a.dirs:
        if not Path(d).is_dir():
            print(f"*** roundtrip_ort_check: {d} is ABSENT; its models are SKIPPED ***")
            continue
        models += sorted(str(p) for p in Path(d).rglob("*.onnx"))
    t0 = time.time()
    with multiprocessing.Pool(a.jobs) as pool:
        results = pool.map(check, [(a.mcc, m) for m in models], chunksize=8)
    counts = Counter(v for _, v, _ in results)
    for m, v, why in results:
        if v.startswith("FAIL") or v == "refused by mcc":
            print(f"{v}: {m}: {why}")
    print(f"roundtrip through ONNX Runtime: {len(models)} models in {time.time() - t0:.0f} s")
    for v in sorted(counts):
        print(f"  {v}: {counts[v]}")
    failed = sum(c for v, c in counts.items() if v.startswith("FAIL"))
    print(f"{len(models) - failed} passed, {failed} failed")
    return 1 if failed or not models else 0


if __name__ == "__main__":
    sys.exit(main())
