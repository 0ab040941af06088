#!/usr/bin/env python3
"""Optional-field round trip through the real CLI: builds the models of
tests/data/gen_optional_fields.py (a base model with every optional field present, one variant
per field without it), runs `mcc convert` on each with no pipeline, with `-p fold` and with
`-p fp16`, and checks every output:
  - no pipeline: equal to the input as a protobuf message, after the normalisations documented
    in ir/onnx_export.cpp (typed tensor data becomes raw_data);
  - every pipeline: the variant's omitted field is still absent, and no value info gains a tensor
    type without an element type that the input did not have;
  - onnx.checker.check_model(full_check=True) passes where it passes on the input;
  - ONNX Runtime loads the output where it loads the input, and its outputs equal the input
    model's (fp16: within fp16 tolerance) on fixed inputs (both If branches).
Prints one line per failure and a closing `N passed, N failed` line; exit 1 on any failure.
Usage: check_optional_fields.py --mcc BUILD/mcc --work DIR [--jobs 2]
"""
import argparse
import difflib
import multiprocessing
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from google.protobuf import text_format as pb_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
import gen_optional_fields as gen  # noqa: E402

MODES = {"none": [], "fold": ["-p", "fold"], "fp16": ["-p", "fp16"]}
FEEDS = [{"cond": np.array(c), "x": np.arange(6, dtype=np.float32).reshape(3, 2) / 4,
          "n": np.array(2, dtype=np.int64), "rows": np.ones((3, 2), np.float32) * 0.75}
         for c in (True, False)]


def typed_to_raw(msg):
    """Normalisation 1 of ir/onnx_export.cpp, on every TensorProto inside msg."""
    if isinstance(msg, onnx.TensorProto):
        typed = any(len(getattr(msg, f)) for f in ("float_data", "int32_data", "int64_data",
                                                   "double_data", "uint64_data"))
        if typed and msg.data_type != onnx.TensorProto.STRING and not msg.raw_data:
            raw = numpy_helper.to_array(msg).tobytes()
            for f in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
                msg.ClearField(f)
            msg.raw_data = raw
        return
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        if hasattr(value, "add"):        # repeated message field
            for v in value:
                typed_to_raw(v)
        elif not hasattr(value, "keys"):
            typed_to_raw(value)


def untyped_tensor_types(m):
    """Names of value infos whose tensor type has no (or a zero) element type."""
    out = []
    for g in gen.graphs(m):
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type == 0:
                out.append(f"{g.name}/{vi.name}")
    for f in m.functions:
        out += [f"{f.name}/{vi.name}" for vi in f.value_info
                if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type == 0]
    return sorted(out)


def checker_ok(m):
    try:
        onnx.checker.check_model(m, full_check=True)
        return True, ""
    except Exception as e:  # noqa: BLE001  (any checker failure)
        return False, str(e).splitlines()[0][:200]


def ort_outputs(path):
    """Outputs for every feed, or the load/run error text."""
    try:
        s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        names = {i.name for i in s.get_inputs()}
        return [s.run(None, {k: v for k, v in f.items() if k in names}) for f in FEEDS], ""
    except Exception as e:  # noqa: BLE001
        return None, str(e).splitlines()[0][:200]


def proto_diff(a, b):
    la = pb_text.MessageToString(a).splitlines()
    lb = pb_text.MessageToString(b).splitlines()
    d = [l for l in difflib.unified_diff(la, lb, "input", "output", n=1, lineterm="")][2:14]
    return " | ".join(x.strip() for x in d)


def check_one(name, variant, path, mcc, work, failures):
    """All modes for one model; returns the number of checks that passed."""
    orig = onnx.load(str(path))
    chk_in, _ = checker_ok(orig)
    ort_in, _ = ort_outputs(path)
    untyped_in = untyped_tensor_types(orig)
    passed = 0
    for mode, args in MODES.items():
        out = work / f"{name}.{mode}.out.onnx"
        problems = []
        r = subprocess.run([mcc, "convert", str(path), "-o", str(out), *args], capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"{name} [{mode}]: mcc exit {r.returncode}: {r.stderr.strip()[-300:]}")
            continue
        res = onnx.load(str(out))
        if mode == "none":
            a, b = onnx.ModelProto(), onnx.ModelProto()
            a.CopyFrom(orig)
            b.CopyFrom(res)
            typed_to_raw(a)
            typed_to_raw(b)
            if a != b:
                problems.append("differs from the input: " + proto_diff(a, b))
        if variant is not None and variant.present(res):
            problems.append(f"the omitted field '{variant.field}' is present in the output")
        gained = sorted(set(untyped_tensor_types(res)) - set(untyped_in))
        if gained:
            problems.append(f"tensor types without an element type appeared: {gained}")
        if chk_in:
            ok, why = checker_ok(res)
            if not ok:
                problems.append(f"onnx.checker fails on the output (passes on the input): {why}")
        if ort_in is not None:
            got, why = ort_outputs(out)
            tol = 1e-2 if mode == "fp16" else 1e-6
            if got is None:
                problems.append(f"ONNX Runtime refuses the output (loads the input): {why}")
            elif any(not np.allclose(x, y, rtol=tol, atol=tol) for ra, rb in zip(ort_in, got)
                     for x, y in zip(ra, rb)):
                problems.append("ONNX Runtime outputs differ from the input model's")
        if problems:
            failures.extend(f"{name} [{mode}]: {p}" for p in problems)
        else:
            passed += 1
    return passed


def run_one(job):
    """Builds one model (the base or the named variant) and checks it: (passed, failures)."""
    name, mcc, work = job
    variant = next((v for v in gen.variants() if v.name == name), None)
    path = Path(work) / f"{name}.onnx"
    onnx.save(variant.build() if variant else gen.base_model(), str(path))
    failures = []
    return check_one(name, variant, path, mcc, Path(work), failures), failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mcc", required=True)
    ap.add_argument("--work", required=True, help="folder for the generated models and outputs")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    models = ["base"] + [v.name for v in gen.variants()]
    with multiprocessing.Pool(a.jobs) as pool:
        results = pool.map(run_one, [(name, a.mcc, str(work)) for name in models])
    passed = sum(p for p, _ in results)
    failures = [f for _, fs in results for f in fs]
    for f in failures:
        print("FAIL", f)
    print(f"optional fields: {len(models)} models x {len(MODES)} modes")
    print(f"{passed} passed, {len(models) * len(MODES) - passed} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
