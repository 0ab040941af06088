"""Helpers shared by the bench scripts: a timed subprocess run, the plain-text result table, the
JSON result (printed, and written to --json when given) and the cosine of two outputs."""
import json
import subprocess
import sys
import time


def run(cmd, **kw):
    """Runs cmd capturing text output; exits with its stderr on failure. Returns (process, seconds)."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    secs = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    return p, secs


def print_table(title, head, rows):
    """Prints title, then head and rows as left-aligned columns two spaces apart."""
    w = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    print(title)
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)).rstrip())


def emit_json(results, path=None, indent=2):
    """Prints `results` as JSON and, when `path` is given, writes the same text there."""
    text = json.dumps(results, indent=indent)
    print(text)
    if path:
        with open(path, "w") as f:
            f.write(text + "\n")


def cosine(a, b):
    """Cosine of two arrays, flattened, in float64 (1 when both are all zero, 0 when one is)."""
    import numpy as np  # here, so that the scripts without numpy still import this module
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 1.0 if na == nb else 0.0
    return float(a @ b / (na * nb))
