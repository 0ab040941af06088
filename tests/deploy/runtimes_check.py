#!/usr/bin/env python3
"""Checks that every kind of compressed model mcc writes deploys in other runtimes.

For each bundled model and each compression mode, run through the real CLI (`mcc quantize` static,
and with `--target ort|openvino|generic` where `mcc quantize -h` lists --target; `--mode dynamic`,
also with `--dynamic-activations per_token`; `--mode weight_only` as qdq and matmul_nbits;
`mcc convert -p fold,fp16`, bf16, and magnitude and channel pruning), the written model must
  - load and run in ONNX Runtime (CPU) at its default optimisation level, ORT_ENABLE_ALL;
  - match mcc's own cpu backend on the same sample (`mcc eval --save-outputs`) within the mode's
    rule (RULES: cosine and SNR floors; float arithmetic also allclose; int8 allows the 1-LSB tie
    flips float noise causes and their spread); each line gives cosine, SNR and the largest
    difference relative to the output's range;
  - replay byte-identically from its sidecar state (`--state`);
  - load and run in OpenVINO (CPU) when `import openvino` works; otherwise a line starting with
    '==== ' says those checks are not run, and each is counted as skipped.

Models and data are bundled, nothing is downloaded: golden/mnist (calibration golden/mnist/calib),
golden/yolox_nano (sample synthetic_0), golden/silero_vad (chunk_0, chunk_1), mnist_ir4 (MNIST
with its initializers no longer graph inputs, so that its MatMul weight is a constant: the MatMul
modes; needs the onnx package) and, when ../shared exists,
../shared/models/mobilenet_v2_random_bn_opset13.onnx with seeded random inputs.

Does not apply to a mode mcc declines on a model (exit 4, unsupported; or a run that changes
nothing; or a MatMul/Gemm mode on a model without such layers): skipped, with the reason. Without
numpy or onnxruntime the whole check does not apply: a '==== ' line and exit 77.

usage: tests/deploy/runtimes_check.py --mcc build/mcc --work DIR [--only TEXT]
Ends with 'N passed, M failed' (', K skipped' when any); exits 1 on any failure.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field

try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:  # the whole check needs both
    print("==== runtimes check NOT run: %s (pip install numpy onnxruntime) ====" % e)
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
EXIT_UNSUPPORTED = 4
EXIT_CHECK_FAILED = 1


@dataclass
class Case:
    """A model and its data: `calib` and `inputs` are folders of sample folders
    (`<sample>/<input name>.npy`); `inputs` holds the one sample every runtime runs."""
    name: str
    model: str
    calib: str
    inputs: str
    ops: set = field(default_factory=set)
    only_modes: tuple = ()  # when set, the modes checked on this case (the others: elsewhere)


@dataclass
class Mode:
    """One way mcc compresses: `command` is quantize or convert, `kind` picks the tolerance."""
    name: str
    command: str
    args: list
    kind: str
    stage: str             # the sidecar stage whose `modified` says mcc did something
    needs_ops: tuple = ()  # the mode applies only to models with one of these ops


class Tally:
    """Counts results and prints one line for each."""

    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def ok(self, label, what):
        self.passed += 1
        print("PASS %s: %s" % (label, what), flush=True)

    def fail(self, label, what):
        self.failed += 1
        print("FAIL %s: %s" % (label, what), flush=True)

    def skip(self, label, what):
        self.skipped += 1
        print("SKIP %s: %s" % (label, what), flush=True)

    def summary(self):
        line = "%d passed, %d failed" % (self.passed, self.failed)
        return line + (", %d skipped" % self.skipped if self.skipped else "")


# ---------------------------------------------------------------- running mcc

def run_mcc(mcc, args, timeout=600):
    """Runs mcc with `args`; returns (exit code, stdout, stderr)."""
    p = subprocess.run([mcc] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def last_line(text):
    """The last non-empty line of `text` (mcc's one-line error), or '(no output)'."""
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1].strip() if lines else "(no output)"


def quantize_has_target(mcc):
    """Whether `mcc quantize -h` lists a --target flag."""
    _, out, err = run_mcc(mcc, ["quantize", "-h"])
    return re.search(r"^\s*--target\b", out + err, re.M) is not None


def bf16_pipeline(mcc):
    """The pipeline that writes bfloat16: a `bf16` stage when `mcc passes` has one, else
    fp16{dtype=bf16} when the fp16 stage offers that choice; None when neither exists."""
    rc, out, _ = run_mcc(mcc, ["passes", "--json"])
    if rc != 0:
        return None
    stages = {s.get("name"): s for s in json.loads(out).get("stages", [])}
    if "bf16" in stages:
        return "fold,bf16"
    dtype = [o for o in stages.get("fp16", {}).get("options", []) if o.get("key") == "dtype"]
    return "fold,fp16{dtype=bf16}" if dtype and "bf16" in dtype[0].get("choices", []) else None


def model_ops(mcc, model):
    """The op types of `model` (subgraphs included) from `mcc inspect --json`; empty when unknown."""
    rc, out, _ = run_mcc(mcc, ["inspect", model, "--json"])
    if rc != 0:
        return set()
    return {o.get("op") for o in json.loads(out).get("ops", [])}


# ---------------------------------------------------------------- data

def copy_inputs(src_sample, dst_sample):
    """Copies the input .npy files of one sample folder (not the output_K.npy references)."""
    os.makedirs(dst_sample, exist_ok=True)
    for f in sorted(os.listdir(src_sample)):
        if f.endswith(".npy") and not f.startswith("output_"):
            shutil.copyfile(os.path.join(src_sample, f), os.path.join(dst_sample, f))


def folder_of(work, name, samples):
    """A folder of sample folders under `work` holding the inputs of `samples` (paths)."""
    d = os.path.join(work, "data", name)
    for s in samples:
        copy_inputs(s, os.path.join(d, os.path.basename(s)))
    return d


def random_samples(work, name, input_name, shape, count, seed):
    """A folder of `count` seeded random float32 samples (normal, like normalised images)."""
    d = os.path.join(work, "data", name)
    rng = np.random.default_rng(seed)
    for k in range(count):
        os.makedirs(os.path.join(d, "random_%d" % k), exist_ok=True)
        sample = rng.standard_normal(shape).astype(np.float32)
        np.save(os.path.join(d, "random_%d" % k, input_name + ".npy"), sample)
    return d


def mnist_ir4(work, mnist):
    """MNIST with its initializers no longer listed as graph inputs (IR 4). In the bundled IR 3
    file they are inputs, which a caller may override, so its MatMul weight (a Reshape of one) is
    not a constant and the MatMul/Gemm modes leave it alone; this copy gives them a MatMul to
    quantize. None (with a note) without the onnx package."""
    try:
        import onnx
    except ImportError:
        print("note: the onnx package is not importable: mnist_ir4 (the MatMul-weight case) not checked")
        return None
    m = onnx.load(mnist)
    inits = {i.name for i in m.graph.initializer}
    kept = [i for i in m.graph.input if i.name not in inits]
    del m.graph.input[:]
    m.graph.input.extend(kept)
    m.ir_version = max(m.ir_version, 4)
    path = os.path.join(work, "data", "mnist_ir4.onnx")
    onnx.save(m, path)
    return path


def bundled_cases(work):
    """The models and their data (all bundled; mobilenet only when ../shared exists)."""
    g = os.path.join(ROOT, "golden")
    cases = [
        Case("mnist", os.path.join(g, "mnist", "model.onnx"), os.path.join(g, "mnist", "calib"),
             folder_of(work, "mnist_sample", [os.path.join(g, "mnist", "digit_0")])),
        Case("yolox_nano", os.path.join(g, "yolox_nano", "model.onnx"),
             folder_of(work, "yolox_nano", [os.path.join(g, "yolox_nano", "synthetic_0")]),
             os.path.join(work, "data", "yolox_nano")),
        Case("silero_vad", os.path.join(g, "silero_vad", "model.onnx"),
             folder_of(work, "silero_vad", [os.path.join(g, "silero_vad", "chunk_%d" % k) for k in (0, 1)]),
             folder_of(work, "silero_vad_sample", [os.path.join(g, "silero_vad", "chunk_0")])),
    ]
    ir4 = mnist_ir4(work, cases[0].model)
    if ir4:
        cases.insert(1, Case("mnist_ir4", ir4, cases[0].calib, cases[0].inputs,
                             only_modes=("dynamic", "dynamic_per_token", "weight_only", "weight_only_nbits")))
    mobilenet = os.path.join(SHARED, "models", "mobilenet_v2_random_bn_opset13.onnx")
    if os.path.isfile(mobilenet):
        calib = random_samples(work, "mobilenet_v2", "input", (1, 3, 224, 224), 4, seed=13)
        cases.append(Case("mobilenet_v2", mobilenet, calib,
                          folder_of(work, "mobilenet_v2_sample", [os.path.join(calib, "random_0")])))
    else:
        print("note: %s not found: mobilenet_v2 not checked" % mobilenet)
    return cases


def load_feeds(inputs_dir, names):
    """The one sample of `inputs_dir` as {input name: array} for the given input names."""
    sample = os.path.join(inputs_dir, sorted(os.listdir(inputs_dir))[0])
    return {n: np.load(os.path.join(sample, n + ".npy")) for n in names}


# ---------------------------------------------------------------- modes

def all_modes(mcc):
    """Every compression mode this mcc offers."""
    modes = [Mode("int8", "quantize", ["--calib", "{calib}"], "int8", "quantize")]
    if quantize_has_target(mcc):
        for t in ("ort", "openvino", "generic"):
            args = ["--calib", "{calib}", "--target", t]
            modes.append(Mode("int8_" + t, "quantize", args, "int8", "quantize"))
    else:
        print("note: 'mcc quantize -h' lists no --target: the per-runtime int8 forms are not checked")
    modes += [
        Mode("dynamic", "quantize", ["--mode", "dynamic"], "dynamic", "quantize", ("MatMul", "Gemm")),
        # Each row's own run-time range: what `auto` gives a causal LM and feed-forward inputs (the
        # bundled models have neither, so `dynamic` above runs one range per tensor).
        Mode("dynamic_per_token", "quantize", ["--mode", "dynamic", "--dynamic-activations", "per_token"], "dynamic",
             "quantize", ("MatMul", "Gemm")),
        Mode("weight_only", "quantize", ["--mode", "weight_only", "--weight-format", "qdq"],
             "weight_only", "quantize", ("MatMul", "Gemm")),
        Mode("weight_only_nbits", "quantize", ["--mode", "weight_only", "--weight-format", "matmul_nbits"],
             "weight_only", "quantize", ("MatMul", "Gemm")),
        Mode("fp16", "convert", ["-p", "fold,fp16"], "fp16", "fp16"),
    ]
    bf16 = bf16_pipeline(mcc)
    if bf16:
        modes.append(Mode("bf16", "convert", ["-p", bf16], "bf16", bf16.split(",")[1].split("{")[0]))
    modes += [
        Mode("prune", "convert", ["-p", "fold,prune{sparsity=0.5}"], "fp32", "prune"),
        Mode("prune_channel", "convert", ["-p", "fold,prune{mode=channel sparsity=0.25}"], "fp32", "prune"),
    ]
    return modes


def unchanged_reason(sidecar, stage):
    """Why the sidecar says stage `stage` left the model as it was, or None when the stage changed
    it or the sidecar does not say. Gives the reason recorded for a skipped MatMul/Gemm (else
    Conv) when there is one, else the stage's first figures."""
    try:
        with open(sidecar) as f:
            state = json.load(f)
    except (OSError, ValueError):
        return None
    found = [s for s in state.get("stages", []) if s.get("pass") == stage]
    if not found or any(s.get("modified", True) for s in found):
        return None
    skipped = sorted((n for s in found for n in s.get("record", {}).get("skipped_nodes", [])
                      if n.get("op") in ("MatMul", "Gemm", "Conv")), key=lambda n: n.get("op") == "Conv")
    if skipped:
        why = "%s %s: %s" % (skipped[0]["op"], skipped[0]["node"], skipped[0].get("reason", ""))
    else:
        why = ", ".join("%s %s" % kv for kv in list(found[0].get("stats", {}).items())[:3])
    return "mcc changed nothing (stage '%s' not modified; %s)" % (stage, why)


def produce(mcc, case, mode, out, t):
    """Writes `out` from `case` in `mode`; returns True, or False when mcc declined (skipped) or
    failed (failed), each reported."""
    label = "%s/%s" % (case.name, mode.name)
    args = [mode.command, case.model, "-o", out, "--threads", "1"]
    args += [a.replace("{calib}", case.calib) for a in mode.args]
    rc, _, err = run_mcc(mcc, args)
    if rc == EXIT_CHECK_FAILED and mode.command == "quantize" and "--calib" in args:
        print("note %s: the self-check refused the result on this tiny data (%s); rerun with --no-check"
              % (label, last_line(err)))
        args.append("--no-check")
        rc, _, err = run_mcc(mcc, args)
    if rc == EXIT_UNSUPPORTED:
        t.skip(label, "mcc declines (exit 4): %s" % last_line(err))
        return False
    if rc != 0:
        t.fail(label, "mcc %s exited %d: %s" % (mode.command, rc, last_line(err)))
        return False
    unchanged = unchanged_reason(out[:-len(".onnx")] + ".mcc.json", mode.stage)
    if unchanged:
        t.skip(label, unchanged)
        return False
    return True


# ---------------------------------------------------------------- checks

def ort_outputs(path, inputs_dir):
    """Runs `path` in ONNX Runtime (CPU, ORT_ENABLE_ALL, one thread) on the sample; returns
    (outputs, None) or (None, error text)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3  # errors only: the verdict lines carry what matters
    try:
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - any refusal is the finding
        return None, "ORT does not load it: " + " ".join(str(e).split())
    try:
        feeds = load_feeds(inputs_dir, [i.name for i in sess.get_inputs()])
        return [np.asarray(o) for o in sess.run(None, feeds)], None
    except Exception as e:  # noqa: BLE001
        return None, "ORT loads it but does not run it: " + " ".join(str(e).split())


def mcc_outputs(mcc, path, inputs_dir, save_dir):
    """Runs `path` on mcc's cpu backend on the sample; returns (outputs, None) or (None, error)."""
    shutil.rmtree(save_dir, ignore_errors=True)
    rc, _, err = run_mcc(mcc, ["eval", path, "--inputs", inputs_dir, "--save-outputs", save_dir,
                               "--threads", "1"])
    if rc != 0:
        return None, "mcc eval exited %d: %s" % (rc, last_line(err))
    sample = os.path.join(save_dir, sorted(os.listdir(save_dir))[0])
    files = sorted((f for f in os.listdir(sample) if f.startswith("output_")), key=lambda f: int(f[7:-4]))
    return [np.load(os.path.join(sample, f)) for f in files], None


@dataclass
class Rule:
    """How close ORT's and mcc's outputs must be for one kind of model (per output): cosine and SNR
    floors, and for float arithmetic mcc eval's fp32 allclose (atol 1e-4 x max(1, max|ref|),
    rtol 1e-3)."""
    min_cosine: float
    min_snr_db: float
    allclose: bool = False


# int8 (static QDQ): ORT and mcc run the same integer arithmetic, but float noise (~1e-7
# relative) moves a value sitting on a rounding tie to the neighbouring code now and then, and in a
# deep network such 1-LSB flips propagate (YOLOX-nano calibrated on one image: 4 of 692224 codes
# of its first quantized activation differ, each an x.5 tie, and the output ends at cosine 0.994,
# 19 dB; ORT differs from itself as much between ORT_DISABLE_ALL and ORT_ENABLE_ALL): mcc eval's
# int8 rule. A wrong scale, zero point or axis costs far more. dynamic: fewer quantized layers,
# tighter. fp16/bf16: ORT runs the fp16 kernels its CPU provider lacks in float32 and drops the
# Casts between them, skipping roundings mcc performs (YOLOX-nano: 31.7 dB; mcc's own fp16 result
# is 30.2 dB from fp32). fp32 (pruned) and weight-only: float arithmetic on identical values,
# mcc eval's fp32 rule.
RULES = {
    "int8": Rule(0.99, 15.0),
    "dynamic": Rule(0.999, 30.0),
    "weight_only": Rule(0.9999, 40.0, allclose=True),
    "fp32": Rule(0.9999, 40.0, allclose=True),
    "fp16": Rule(0.999, 25.0),
    "bf16": Rule(0.995, 20.0),
}


@dataclass
class Diff:
    """Figures of one output: cosine, SNR (dB), largest |diff| relative to the reference's range,
    and whether mcc eval's fp32 allclose holds."""
    cosine: float
    snr_db: float
    max_rel_range: float
    allclose: bool


def output_diff(ref, got):
    """The figures of `got` against `ref`; None when the shapes differ."""
    if ref.shape != got.shape:
        return None
    r, g = ref.astype(np.float64).ravel(), got.astype(np.float64).ravel()
    if r.size == 0:
        return Diff(1.0, float("inf"), 0.0, True)
    if not np.all(np.isfinite(g)):
        return Diff(0.0, float("-inf"), float("inf"), False)
    d = np.abs(r - g)
    nr, ng, nd = np.linalg.norm(r), np.linalg.norm(g), np.linalg.norm(d)
    cosine = 1.0 if nr == 0 and ng == 0 else float(np.dot(r, g) / max(nr * ng, 1e-300))
    snr = float("inf") if nd == 0 else 20 * np.log10(max(nr, 1e-300) / nd)
    span = float(r.max() - r.min()) or max(float(np.abs(r).max()), 1.0)
    atol = 1e-4 * max(1.0, float(np.abs(r).max()))
    return Diff(cosine, snr, float(d.max()) / span, bool(np.all(d <= atol + 1e-3 * np.abs(r))))


def compare(kind, ort_outs, mcc_outs):
    """Compares ORT's and mcc's outputs under `kind`'s rule; returns (ok, one-line figures)."""
    if len(ort_outs) != len(mcc_outs):
        return False, "ORT gives %d outputs, mcc %d" % (len(ort_outs), len(mcc_outs))
    rule = RULES[kind]
    ok, parts = True, []
    for k, (o, m) in enumerate(zip(ort_outs, mcc_outs)):
        d = output_diff(o, m)
        if d is None:
            ok = False
            parts.append("output_%d shape ORT %s vs mcc %s" % (k, o.shape, m.shape))
            continue
        good = (d.cosine >= rule.min_cosine and d.snr_db >= rule.min_snr_db
                and (d.allclose or not rule.allclose))
        ok = ok and good
        parts.append("output_%d cosine %.6f snr %.1f dB max|diff|/range %.2e%s%s"
                     % (k, d.cosine, d.snr_db, d.max_rel_range, "" if d.allclose else " (not allclose)",
                        "" if good else " [needs cosine >= %g, snr >= %g dB%s]"
                        % (rule.min_cosine, rule.min_snr_db, ", allclose" if rule.allclose else "")))
    return ok, "; ".join(parts)


def replay_identical(mcc, case, mode, out, replay_out):
    """Replays `out`'s sidecar state into `replay_out`; returns (ok, text)."""
    state = out[:-len(".onnx")] + ".mcc.json"
    rc, _, err = run_mcc(mcc, [mode.command, case.model, "-o", replay_out, "--state", state,
                               "--threads", "1"])
    if rc != 0:
        return False, "replay exited %d: %s" % (rc, last_line(err))
    with open(out, "rb") as a, open(replay_out, "rb") as b:
        same = a.read() == b.read()
    return same, "byte-identical" if same else "replayed model differs from the original run's bytes"


def openvino_core():
    """(an OpenVINO Core limited to one CPU thread, None), or (None, the loud line saying the
    OpenVINO checks do not run) when openvino is not importable."""
    try:
        import openvino as ov
    except ImportError as e:
        return None, ("==== OpenVINO checks NOT run: openvino is not importable (%s); "
                      "pip install openvino ====" % e)
    core = ov.Core()
    # float32 as written (its default on CPUs with bf16 support is bf16), one thread.
    core.set_property("CPU", {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32"})
    return core, None


def openvino_run(core, path, inputs_dir, ort_outs):
    """Compiles `path` for OpenVINO's CPU device and runs the sample; returns (ok, text). The
    cosine against ORT's outputs is reported for information only (OpenVINO runs its own int8
    and fp16 kernels)."""
    try:
        compiled = core.compile_model(path, "CPU")
    except Exception as e:  # noqa: BLE001
        return False, "OpenVINO does not compile it: " + " ".join(str(e).split())[:400]
    try:
        names = [i.get_any_name() for i in compiled.inputs]
        result = compiled(load_feeds(inputs_dir, names))
        outs = [np.asarray(result[o]) for o in compiled.outputs]
    except Exception as e:  # noqa: BLE001
        return False, "OpenVINO compiles it but does not run it: " + " ".join(str(e).split())[:400]
    if not ort_outs:
        return True, "compiles and runs (no ORT outputs to compare with)"
    info = []
    for k, (o, v) in enumerate(zip(ort_outs, outs)):
        d = output_diff(o, v.astype(o.dtype) if v.shape == o.shape else v)
        info.append("output_%d %s" % (k, "shape %s vs ORT %s" % (v.shape, o.shape) if d is None
                                      else "cosine vs ORT %.6f" % d.cosine))
    return True, "compiles and runs (%s)" % ", ".join(info)


def check_output(mcc, case, mode, out, ov_core, t):
    """Runs the four checks on one written model."""
    label = "%s/%s" % (case.name, mode.name)
    base = out[:-len(".onnx")]
    ort_outs, err = ort_outputs(out, case.inputs)
    if err and mode.kind == "bf16" and "NOT_IMPLEMENTED" in err:
        # ORT's CPU provider has almost no bfloat16 kernels: bf16 models are for runtimes that do
        # (OpenVINO below, GPUs). Said loudly, counted as skipped, never as passed.
        t.skip(label, "==== ort: NOT RUN: its CPU provider has no bfloat16 kernel here: " + err + " ====")
    elif err:
        t.fail(label, "ort: " + err)
    else:
        t.ok(label, "ort: loads and runs (ORT_ENABLE_ALL)")
        mcc_outs, err = mcc_outputs(mcc, out, case.inputs, base + ".mcc_outputs")
        if err:
            t.fail(label, "match: " + err)
        else:
            ok, text = compare(mode.kind, ort_outs, mcc_outs)
            (t.ok if ok else t.fail)(label, "match (%s): %s" % (mode.kind, text))
    ok, text = replay_identical(mcc, case, mode, out, base + ".replay.onnx")
    (t.ok if ok else t.fail)(label, "replay: " + text)
    if ov_core is None:
        t.skip(label, "openvino: not importable")
    else:
        ok, text = openvino_run(ov_core, out, case.inputs, ort_outs)
        (t.ok if ok else t.fail)(label, "openvino: " + text)


def applies(case, mode):
    """None when `mode` applies to `case`, else the reason it does not."""
    if mode.needs_ops and case.ops and not case.ops.intersection(mode.needs_ops):
        return "no %s layer" % "/".join(mode.needs_ops)
    return None


def fresh_work_dir(work):
    """Empties `work` for a run: creates it, or clears one this script made before (it holds the
    marker file); returns False, leaving it alone, for any other non-empty folder."""
    marker = os.path.join(work, ".runtimes_check")
    if os.path.isdir(work) and os.listdir(work):
        if not os.path.isfile(marker):
            return False
        shutil.rmtree(work)
    os.makedirs(work, exist_ok=True)
    open(marker, "w").close()
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mcc", required=True, help="the mcc binary")
    ap.add_argument("--work", required=True, help="scratch folder (emptied first if this script made it)")
    ap.add_argument("--only", default="", help="check only model/mode labels containing this text")
    a = ap.parse_args()
    mcc = os.path.abspath(a.mcc)
    if not os.access(mcc, os.X_OK):
        print("runtimes_check: %s is not an executable; build mcc first" % mcc)
        return 2
    if not fresh_work_dir(a.work):
        print("runtimes_check: %s is not empty and was not made by this script; choose another --work"
              % a.work)
        return 2
    start = time.time()
    print("onnxruntime %s; mcc %s" % (ort.__version__, mcc))
    t = Tally()
    ov_core, ov_missing = openvino_core()
    if ov_missing:
        print(ov_missing)
    modes = all_modes(mcc)
    for case in bundled_cases(a.work):
        case.ops = model_ops(mcc, case.model)
        for mode in modes:
            label = "%s/%s" % (case.name, mode.name)
            if a.only not in label or (case.only_modes and mode.name not in case.only_modes):
                continue
            reason = applies(case, mode)
            if reason:
                t.skip(label, reason)
                continue
            out = os.path.join(a.work, case.name + "." + mode.name + ".onnx")
            if produce(mcc, case, mode, out, t):
                check_output(mcc, case, mode, out, ov_core, t)
    print("time: %.0f s" % (time.time() - start))
    if ov_missing:
        print(ov_missing)
    print(t.summary())
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
