#!/usr/bin/env python3
"""Export a Llama-architecture decoder with a KV cache (the past_key_values layout of Optimum and
ONNX Runtime GenAI) to ONNX opset 13, then check it against the cache-less forward in ONNX Runtime.

usage:
  python3 bench/export_llama_kv.py BUILD_DIR OUT.onnx
      weights and config of ../shared/tools/smollm2's build folder (config.json, weights_fp32.npz)
  python3 bench/export_llama_kv.py --random SEED --config CONFIG.json OUT.onnx [--external-data]
      seeded random weights (normal, std 0.02; norms 1) of a config's shape, e.g. TinyLlama-1.1B's;
      --external-data writes the weights beside the model (OUT.onnx.data), needed above 2 GB

Graph inputs and outputs (Optimum's names; nkv = key/value heads, hd = head dim):
  input_ids               int64 [batch, seq]
  attention_mask          int64 [batch, past_seq + seq]   1 = a real token, 0 = padding
  position_ids            int64 [batch, seq]
  past_key_values.L.key   float [batch, nkv, past_seq, hd]   (and .value), L = 0 .. layers-1;
                          past_seq may be 0 (a prefill): feed arrays of shape [batch, nkv, 0, hd]
  logits                  float [batch, seq, vocab]
  present.L.key           float [batch, nkv, past_seq + seq, hd]   (and .value): keys after RoPE,
                          before the grouped-query repeat, as the runtimes keep them

The check (ONNX Runtime, CPU): a prefill of 12 tokens with an empty cache gives the cache-less
logits, and one decode step fed the prefill's presents gives the logits of a 13-token prefill.
Needs PyTorch (Debian's python3-torch, or pip's) and onnx; the check runs under CHECK_PYTHON
(default python3) when the exporting interpreter has no onnxruntime (Debian's torch is /usr/bin/python3's).
  python3 bench/export_llama_kv.py --check-only CONFIG.json OUT.onnx      the check alone
"""
import argparse
import json
import math
import os
import sys

import subprocess

import numpy as np

if "--check-only" not in sys.argv:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
else:  # the check needs numpy and onnxruntime only
    nn = type("nn", (), {"Module": object})

NEG = -1e9  # additive mask value (finite: softmax of a fully masked row stays defined)


class RMSNorm(nn.Module):
    def __init__(s, n, eps):
        super().__init__()
        s.weight = nn.Parameter(torch.ones(n))
        s.eps = eps

    def forward(s, x):
        return s.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + s.eps))


def rot_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


class Layer(nn.Module):
    def __init__(s, c):
        super().__init__()
        d, s.nh, s.nkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        s.hd = d // s.nh
        s.input_layernorm = RMSNorm(d, c["rms_norm_eps"])
        s.post_attention_layernorm = RMSNorm(d, c["rms_norm_eps"])
        s.q_proj = nn.Linear(d, s.nh * s.hd, bias=False)
        s.k_proj = nn.Linear(d, s.nkv * s.hd, bias=False)
        s.v_proj = nn.Linear(d, s.nkv * s.hd, bias=False)
        s.o_proj = nn.Linear(s.nh * s.hd, d, bias=False)
        s.gate_proj = nn.Linear(d, c["intermediate_size"], bias=False)
        s.up_proj = nn.Linear(d, c["intermediate_size"], bias=False)
        s.down_proj = nn.Linear(c["intermediate_size"], d, bias=False)

    def forward(s, x, cos, sin, mask, past_k, past_v):
        B, T, _ = x.shape
        h = s.input_layernorm(x)
        q = s.q_proj(h).view(B, T, s.nh, s.hd).transpose(1, 2)
        k = s.k_proj(h).view(B, T, s.nkv, s.hd).transpose(1, 2)
        v = s.v_proj(h).view(B, T, s.nkv, s.hd).transpose(1, 2)
        q = q * cos + rot_half(q) * sin
        k = k * cos + rot_half(k) * sin
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        present = (k, v)
        rep = s.nh // s.nkv
        kr = k.unsqueeze(2).expand(-1, -1, rep, -1, -1).reshape(B, s.nh, -1, s.hd)
        vr = v.unsqueeze(2).expand(-1, -1, rep, -1, -1).reshape(B, s.nh, -1, s.hd)
        a = torch.matmul(q, kr.transpose(2, 3)) / math.sqrt(s.hd) + mask
        a = torch.softmax(a, dim=-1)
        o = torch.matmul(a, vr).transpose(1, 2).reshape(B, T, s.nh * s.hd)
        x = x + s.o_proj(o)
        h = s.post_attention_layernorm(x)
        return x + s.down_proj(F.silu(s.gate_proj(h)) * s.up_proj(h)), present


class LlamaKV(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.c = c
        s.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        s.layers = nn.ModuleList([Layer(c) for _ in range(c["num_hidden_layers"])])
        s.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        s.tied = c.get("tie_word_embeddings", True)
        if not s.tied:
            s.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        hd = c["hidden_size"] // c["num_attention_heads"]
        inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2).float() / hd))
        s.register_buffer("inv_freq", inv, persistent=False)

    def forward(s, input_ids, attention_mask, position_ids, *past):
        T = input_ids.shape[1]
        P = past[0].shape[2]
        x = s.embed_tokens(input_ids)
        fr = position_ids.to(torch.float32)[..., None] * s.inv_freq
        emb = torch.cat([fr, fr], dim=-1)
        cos, sin = emb.cos()[:, None], emb.sin()[:, None]           # [B, 1, T, hd]
        q_pos = torch.arange(T)[:, None] + P
        k_pos = torch.arange(T + P)[None, :]
        causal = (k_pos > q_pos).to(torch.float32)[None, None] * NEG  # [1, 1, T, P+T]
        pad = (1.0 - attention_mask.to(torch.float32))[:, None, None, :] * NEG
        mask = causal + pad
        presents = []
        for i, layer in enumerate(s.layers):
            x, pr = layer(x, cos, sin, mask, past[2 * i], past[2 * i + 1])
            presents.extend(pr)
        h = s.norm(x)
        logits = torch.matmul(h, s.embed_tokens.weight.t()) if s.tied else s.lm_head(h)
        return (logits, *presents)


def io_names(layers):
    past = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    present = [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    return past, present


def load_weights(model, build_dir):
    w = np.load(os.path.join(build_dir, "weights_fp32.npz"))
    sd = {k[len("model."):].replace("self_attn.", "").replace("mlp.", ""): torch.from_numpy(w[k]) for k in w.files}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    if missing or unexpected:
        sys.exit(f"weights do not fit the model: missing {missing}, unexpected {unexpected}")


def random_weights(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("layernorm.weight") or name == "norm.weight":
                p.fill_(1.0)
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)


def feeds(c, ids, past=None):
    B, T = ids.shape
    nkv, hd = c["num_key_value_heads"], c["hidden_size"] // c["num_attention_heads"]
    P = 0 if past is None else past[0].shape[2]
    f = {"input_ids": ids.astype(np.int64), "attention_mask": np.ones((B, P + T), np.int64),
         "position_ids": np.arange(P, P + T, dtype=np.int64)[None].repeat(B, 0)}
    names, _ = io_names(c["num_hidden_layers"])
    for k, n in enumerate(names):
        f[n] = np.zeros((B, nkv, 0, hd), np.float32) if past is None else past[k]
    return f


def check(path, c):
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ids = np.random.default_rng(0).integers(0, c["vocab_size"], (1, 13))
    full = sess.run(None, feeds(c, ids))
    pre = sess.run(None, feeds(c, ids[:, :12]))
    step = sess.run(None, feeds(c, ids[:, 12:], pre[1:]))
    d_pre = float(np.abs(pre[0] - full[0][:, :12]).max())
    d_step = float(np.abs(step[0][:, 0] - full[0][:, 12]).max())
    scale = float(np.abs(full[0]).max())
    print(f"check: prefill 12 vs 13-token logits max |diff| {d_pre:.2e}, decode step {d_step:.2e} "
          f"(logit scale {scale:.2f}); present shape {step[1].shape}")
    if not (d_pre <= 1e-3 * max(scale, 1) and d_step <= 1e-3 * max(scale, 1)):
        sys.exit("check FAILED: the cache does not reproduce the full forward")


def check_anywhere(path, c, cfg_path):
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        py = os.environ.get("CHECK_PYTHON", "python3")
        print(f"check: onnxruntime not importable here, running it under {py}")
        r = subprocess.run([py, os.path.abspath(__file__), "--check-only", cfg_path, path])
        if r.returncode:
            sys.exit(r.returncode)
        return
    check(path, c)


def main():
    if sys.argv[1:2] == ["--check-only"] and len(sys.argv) == 4:
        with open(sys.argv[2]) as f:
            check(sys.argv[3], json.load(f))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", help="BUILD_DIR OUT.onnx, or OUT.onnx with --random")
    ap.add_argument("--random", type=int, help="seeded random weights instead of BUILD_DIR's")
    ap.add_argument("--config", help="config.json (Hugging Face Llama keys) for --random")
    ap.add_argument("--external-data", action="store_true", help="weights in OUT.onnx.data")
    a = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    if a.random is None:
        if len(a.paths) != 2:
            sys.exit("usage: export_llama_kv.py BUILD_DIR OUT.onnx")
        build_dir, out = a.paths
        cfg_path = os.path.join(build_dir, "config.json")
    else:
        if len(a.paths) != 1 or not a.config:
            sys.exit("usage: export_llama_kv.py --random SEED --config CONFIG.json OUT.onnx")
        out, cfg_path = a.paths[0], a.config
    with open(cfg_path) as f:
        c = json.load(f)
    model = LlamaKV(c).eval()
    if a.random is None:
        load_weights(model, build_dir)
    else:
        random_weights(model, a.random)
    print("parameters", sum(p.numel() for p in model.parameters()))

    L, nkv, hd = c["num_hidden_layers"], c["num_key_value_heads"], c["hidden_size"] // c["num_attention_heads"]
    past_names, present_names = io_names(L)
    # Traced with a non-empty cache so that nothing specialises on past_seq == 0.
    ids = torch.tensor([[1, 2, 3, 4]])
    past = [torch.zeros(1, nkv, 3, hd) for _ in past_names]
    args = (ids, torch.ones(1, 7, dtype=torch.int64), torch.tensor([[3, 4, 5, 6]]), *past)
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "total_seq"},
            "position_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    axes.update({n: {0: "batch", 2: "past_seq"} for n in past_names})
    axes.update({n: {0: "batch", 2: "total_seq"} for n in present_names})
    tmp = out + ".tmp.onnx"
    with torch.no_grad():
        torch.onnx.export(model, args, tmp, opset_version=13, do_constant_folding=True,
                          input_names=["input_ids", "attention_mask", "position_ids", *past_names],
                          output_names=["logits", *present_names], dynamic_axes=axes)
    import onnx
    m = onnx.load(tmp)
    os.remove(tmp)
    if a.external_data:
        onnx.save(m, out, save_as_external_data=True, all_tensors_to_one_file=True,
                  location=os.path.basename(out) + ".data", size_threshold=1024)
    else:
        onnx.save(m, out)
    print("exported", out)
    check_anywhere(out, c, cfg_path)


if __name__ == "__main__":
    main()
