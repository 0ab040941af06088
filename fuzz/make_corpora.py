#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/*.cpp) into OUT/<target>/ from what the
repository and the machine already hold: models and test data (tests/data, golden/,
../shared/models, Debian's ONNX node tests), sidecar states (tests/data/states_v1, golden/), the
pipeline spec examples (fuzz/seeds/pipeline_specs.txt, README.md, docs/*.md, ../shared/SPEC.md) and .npy
files generated with numpy. Only small files are taken (MAX_BYTES); missing sources are skipped
with a note. Usage: make_corpora.py OUT [MAX_BYTES]. Nothing here is committed: OUT lives in the
fuzz build folder."""
import hashlib
import io
import json
import os
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED = pathlib.Path(os.environ.get("MCC_SHARED_DIR", ROOT.parent / "shared"))
NODE_TESTS = [pathlib.Path("/usr/share/libonnx-testdata/data"), SHARED / "onnx-node-tests"]


def put(out, target, data):
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    (d / ("seed-" + hashlib.sha1(data).hexdigest()[:16])).write_bytes(data)


def small_files(roots, pattern, max_bytes, limit):
    found = []
    for r in roots:
        if not r.exists():
            print(f"make_corpora: {r} absent, skipped")
            continue
        for p in sorted(r.rglob(pattern)):
            if p.is_file() and p.stat().st_size <= max_bytes:
                found.append(p)
    # An even spread when there are more than `limit` (the node tests hold over a thousand).
    step = max(1, len(found) // limit)
    return found[::step][:limit]


def models_and_values(out, max_bytes):
    roots = [ROOT / "tests" / "data", ROOT / "golden", SHARED / "models"] + NODE_TESTS
    for p in small_files(roots, "*.onnx", max_bytes, 500):
        put(out, "onnx_model", p.read_bytes())
    for p in small_files(NODE_TESTS + [ROOT / "golden"], "*.pb", max_bytes, 400):
        name = str(p).lower()
        kind = 1 if "sequence" in name else 2 if "optional" in name else 0
        put(out, "tensor_pb", bytes([kind]) + p.read_bytes())


def npy_files(out, max_bytes):
    for p in small_files([ROOT / "tests" / "data", ROOT / "golden"], "*.npy", max_bytes, 50):
        put(out, "npy", p.read_bytes())
    try:
        import numpy as np
    except ImportError:
        print("make_corpora: numpy absent, no generated .npy seeds")
        return
    arrays = [np.zeros((2, 3), np.float32), np.arange(5, dtype=np.int64), np.array(3.5),
              np.ones((1, 0, 2), np.float16), np.array([True, False]), np.arange(4, dtype=np.uint8),
              np.arange(6, dtype=np.int16).reshape(2, 3), np.arange(3, dtype=np.float64)]
    for a in arrays:
        for version in [(1, 0), (2, 0), (3, 0)]:
            buf = io.BytesIO()
            np.lib.format.write_array(buf, a, version=version)
            put(out, "npy", buf.getvalue())


def spec_texts():
    specs = [l.strip() for l in (ROOT / "fuzz" / "seeds" / "pipeline_specs.txt").read_text().splitlines()]
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), SHARED / "SPEC.md"]:
        if doc.exists():
            specs += re.findall(r"-p '([^']+)'", doc.read_text(errors="replace"))
    return sorted({s for s in specs if s})


def pipelines(out):
    specs = spec_texts()
    for s in specs:
        put(out, "pipeline_spec", s.encode())
        put(out, "pipeline_file", b"\x02" + s.encode())
        stages = [part for part in re.split(r",(?![^{]*\})", s)]
        listed = []
        for st in stages:
            m = re.match(r"(?:([a-z][a-z0-9_-]*):)?([a-z0-9_]+)(?:\{(.*)\})?$", st)
            if not m:
                continue
            entry = {"stage": m.group(2)}
            if m.group(1):
                entry["label"] = m.group(1)
            if m.group(3):
                entry["options"] = dict(kv.split("=", 1) for kv in m.group(3).split(" ") if "=" in kv)
            listed.append(entry)
        put(out, "pipeline_file", b"\x00" + json.dumps({"pipeline": listed}).encode())
        yaml = "pipeline:\n" + "".join(
            f"  - stage: {e['stage']}\n" + (f"    label: {e['label']}\n" if "label" in e else "") +
            ("    options:\n" + "".join(f"      {k}: {v}\n" for k, v in e.get("options", {}).items())
             if e.get("options") else "") for e in listed)
        put(out, "pipeline_file", b"\x01" + yaml.encode())
    for p in small_files([ROOT / "tests"], "*.yaml", 4096, 50) + small_files([ROOT / "tests"], "*.yml", 4096, 50):
        put(out, "pipeline_file", b"\x01" + p.read_bytes())


def states(out, max_bytes):
    for p in small_files([ROOT / "tests" / "data" / "states_v1", ROOT / "golden"], "*.mcc.json", max_bytes, 50):
        put(out, "sidecar", p.read_bytes())


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: make_corpora.py OUT [MAX_BYTES]")
    out = pathlib.Path(sys.argv[1])
    max_bytes = int(sys.argv[2]) if len(sys.argv) > 2 else 65536
    models_and_values(out, max_bytes)
    npy_files(out, max_bytes)
    pipelines(out)
    states(out, max_bytes)
    for d in sorted(out.iterdir()):
        print(f"make_corpora: {d.name}: {len(list(d.iterdir()))} seeds")


if __name__ == "__main__":
    main()
