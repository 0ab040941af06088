#!/usr/bin/env python3
"""Helpers of scripts/gpu_check.sh that need onnx / onnxruntime.

  gpu_check.py batchable IN.onnx OUT.onnx
      Writes a copy of IN whose inputs' first dim is the symbolic `batch` (Reshape shape constants
      whose first element is 1 become -1, or 0 where the shape already has a -1), then checks with
      ONNX Runtime (CPU) that a batch of 2 gives the two batch-1 results. Exit 0: usable at any
      batch; 3: the model's batch dim is fixed (reason on stdout); 2: onnx/onnxruntime missing.
  gpu_check.py shapes IN.onnx BATCH [SEQ]
      Prints `name=AxBxC` per graph input for `mcc bench --shape`: a fixed dim as it is, a symbolic
      first dim BATCH, any other symbolic dim SEQ (default 128).
  gpu_check.py ort IN.onnx BATCH --runs N --warmup W [--provider cpu|cuda] [--seq S]
      Times ONNX Runtime on seeded random inputs (numpy in, numpy out: host<->device copies are in
      every run on CUDA), prints one JSON line: provider, median_ms, p90_ms, mean_ms, runs.
      Exit 4 when the provider is not available.
  gpu_check.py sample IN.onnx DIR BATCH [SEQ]
      Writes seeded random inputs, DIR/<input>.npy (floats in [0, 1), integer ids in [0, 1000),
      masks of ones, token types of zeros), for `mcc eval|bench --inputs DIR`; ONNX Runtime's
      timings use the same inputs.
  gpu_check.py info
      Prints the onnxruntime version and its providers (one line), or why it cannot be imported.
  gpu_check.py skeleton IN.onnx OUT.onnx
      Writes IN without the data of its float initializers of 4096 elements or more: each keeps
      its name, type and shape, and its doc_string records the data's mean and standard deviation.
      For a GPU machine that cannot reach the models and cannot take them along (a 650 MB LLM):
      the skeleton is a few hundred KB. Everything else (graph, small constants, integer tensors)
      is kept as it is.
  gpu_check.py refill SKELETON.onnx OUT.onnx
      Writes a runnable model from a skeleton: every emptied initializer is filled with seeded
      normal values of its recorded mean and deviation (seed from the tensor's name, so the same
      skeleton always gives the same model). Timings hold; outputs are not the real model's.
"""
import json
import sys
import time


def _ort():
    try:
        import onnxruntime as ort
        return ort
    except Exception as e:  # noqa: BLE001 - any import failure means "not available"
        print(f"onnxruntime not importable: {e}")
        sys.exit(2)


def cmd_info(_args):
    ort = _ort()
    print(f"onnxruntime {ort.__version__}; providers: {', '.join(ort.get_available_providers())}")


def _graph_inputs(model):
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def _dims(vi):
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in vi.type.tensor_type.shape.dim]


def _resolve(dims, batch, seq):
    """A symbolic first dim is the batch, any other symbolic dim the sequence."""
    return [d if isinstance(d, int) and d > 0 else (batch if k == 0 else seq) for k, d in enumerate(dims)]


def cmd_shapes(args):
    import onnx
    model = onnx.load(args[0], load_external_data=False)
    batch, seq = int(args[1]), int(args[2]) if len(args) > 2 else 128
    print(" ".join(f"{vi.name}={'x'.join(map(str, _resolve(_dims(vi), batch, seq)))}"
                   for vi in _graph_inputs(model)))


def _random_feeds(sess, batch, seq, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    types = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
             "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_}
    feeds = {}
    for i in sess.get_inputs():
        shape = _resolve([d if isinstance(d, int) else None for d in i.shape], batch, seq)
        t = types.get(i.type)
        if t is None:
            raise SystemExit(f"input {i.name}: type {i.type} not supported here")
        if t in (np.int64, np.int32):
            if "mask" in i.name:
                feeds[i.name] = np.ones(shape, t)
            elif "type" in i.name:  # token type ids: one segment
                feeds[i.name] = np.zeros(shape, t)
            else:
                feeds[i.name] = rng.integers(0, 1000, shape).astype(t)
        elif t is np.bool_:
            feeds[i.name] = np.ones(shape, t)
        else:
            feeds[i.name] = rng.random(shape, dtype=np.float32).astype(t)
    return feeds


def cmd_sample(args):
    import os
    import numpy as np
    ort = _ort()
    sess = ort.InferenceSession(args[0], providers=["CPUExecutionProvider"])
    seq = int(args[3]) if len(args) > 3 else 128
    os.makedirs(args[1], exist_ok=True)
    for name, value in _random_feeds(sess, int(args[2]), seq).items():
        np.save(os.path.join(args[1], name + ".npy"), value)
    print(args[1])


def cmd_batchable(args):
    try:
        import numpy as np
        import onnx
        from onnx import numpy_helper
    except Exception as e:  # noqa: BLE001
        print(f"onnx/numpy not importable: {e}")
        sys.exit(2)
    ort = _ort()
    src, dst = args[0], args[1]
    model = onnx.load(src)
    for vi in _graph_inputs(model):
        dims = vi.type.tensor_type.shape.dim
        if not dims:
            print(f"input {vi.name} is a scalar")
            sys.exit(3)
        dims[0].Clear()
        dims[0].dim_param = "batch"
    for vi in model.graph.output:
        dims = vi.type.tensor_type.shape.dim
        if dims:
            dims[0].Clear()
            dims[0].dim_param = "batch"
    del model.graph.value_info[:]
    inits = {i.name: i for i in model.graph.initializer}
    consts = {n.output[0]: n for n in model.graph.node if n.op_type == "Constant"}
    for n in model.graph.node:
        if n.op_type != "Reshape" or len(n.input) < 2:
            continue
        tensor = inits.get(n.input[1])
        if tensor is None and n.input[1] in consts:
            tensor = next((a.t for a in consts[n.input[1]].attribute if a.name == "value"), None)
        if tensor is None:
            continue
        shape = numpy_helper.to_array(tensor).copy()
        if shape.ndim != 1 or shape.size == 0 or shape[0] != 1:
            continue
        shape[0] = 0 if (shape == -1).any() else -1
        tensor.CopyFrom(numpy_helper.from_array(shape.astype(np.int64), tensor.name))
    onnx.save(model, dst)
    try:
        sess = ort.InferenceSession(dst, providers=["CPUExecutionProvider"])
        f2 = _random_feeds(sess, 2, 128, seed=1)
        both = sess.run(None, f2)
        for k in range(2):
            one = sess.run(None, {n: v[k:k + 1] for n, v in f2.items()})
            for a, b in zip(both, one):
                if a.shape[0] != 2 or not np.allclose(a[k:k + 1], b, rtol=1e-3, atol=1e-4):
                    print("batch 2 does not give the two batch-1 results: the batch dim is fixed")
                    sys.exit(3)
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001
        print(f"batch 2 fails in ONNX Runtime: {str(e).splitlines()[0][:200]}")
        sys.exit(3)
    print(f"batch dim is free: {dst}")


def cmd_ort(args):
    import argparse
    ap = argparse.ArgumentParser(prog="gpu_check.py ort")
    ap.add_argument("model")
    ap.add_argument("batch", type=int)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--provider", choices=["cpu", "cuda"], default="cpu")
    a = ap.parse_args(args)
    ort = _ort()
    name = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}[a.provider]
    if name not in ort.get_available_providers():
        print(json.dumps({"provider": name, "error": "not available"}))
        sys.exit(4)
    providers = [name] + (["CPUExecutionProvider"] if a.provider == "cuda" else [])
    sess = ort.InferenceSession(a.model, providers=providers)
    if sess.get_providers()[0] != name:
        print(json.dumps({"provider": name, "error": f"session fell back to {sess.get_providers()}"}))
        sys.exit(4)
    feeds = _random_feeds(sess, a.batch, a.seq)
    for _ in range(a.warmup):
        sess.run(None, feeds)
    times = []
    for _ in range(a.runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1000.0)
    times.sort()
    n = len(times)
    print(json.dumps({"provider": name, "median_ms": times[n // 2] if n % 2 else (times[n // 2 - 1] + times[n // 2]) / 2,
                      "p90_ms": times[min(n - 1, int(0.9 * n))], "mean_ms": sum(times) / n, "runs": n,
                      "ort_version": ort.__version__}))


SKELETON_MIN_ELEMENTS = 4096
SKELETON_TAG = "mcc-skeleton"


def cmd_skeleton(args):
    import numpy as np
    import onnx
    from onnx import numpy_helper
    model = onnx.load(args[0])
    emptied = 0
    for t in model.graph.initializer:
        if t.data_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16):
            continue
        a = numpy_helper.to_array(t)
        if a.size < SKELETON_MIN_ELEMENTS:
            continue
        a = a.astype(np.float64)
        dims, dtype, name = list(t.dims), t.data_type, t.name
        t.Clear()
        t.name, t.data_type = name, dtype
        t.dims.extend(dims)
        t.doc_string = f"{SKELETON_TAG} mean={a.mean():.9g} std={a.std():.9g}"
        emptied += 1
    onnx.save(model, args[1])
    print(f"{args[1]}: {emptied} initializers emptied")


def cmd_refill(args):
    import zlib
    import numpy as np
    import onnx
    from onnx import numpy_helper
    model = onnx.load(args[0])
    filled = 0
    for t in model.graph.initializer:
        if not t.doc_string.startswith(SKELETON_TAG):
            continue
        stats = dict(kv.split("=") for kv in t.doc_string.split()[1:])
        rng = np.random.default_rng(zlib.crc32(t.name.encode()))
        a = rng.standard_normal(tuple(t.dims), dtype=np.float32) * np.float32(stats["std"]) + np.float32(stats["mean"])
        dtype = np.float16 if t.data_type == onnx.TensorProto.FLOAT16 else np.float32
        t.CopyFrom(numpy_helper.from_array(a.astype(dtype), t.name))
        filled += 1
    onnx.save(model, args[1])
    print(f"{args[1]}: {filled} initializers filled with seeded random values")


def main():
    cmds = {"info": cmd_info, "shapes": cmd_shapes, "sample": cmd_sample, "batchable": cmd_batchable, "ort": cmd_ort,
            "skeleton": cmd_skeleton, "refill": cmd_refill}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        print(__doc__)
        sys.exit(2)
    cmds[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
