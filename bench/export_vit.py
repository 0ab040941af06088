#!/usr/bin/python3
"""Exports a torchvision Vision Transformer with random weights to ONNX (a large model for the
convert benchmarks). Needs Debian's python3-torch and python3-torchvision (/usr/bin/python3).

usage: bench/export_vit.py OUT.onnx [vit_b_16|vit_l_16]   (vit_l_16: ~1.2 GB, vit_b_16: ~350 MB)
"""
import sys

import torch
import torchvision

out = sys.argv[1]
arch = sys.argv[2] if len(sys.argv) > 2 else "vit_l_16"
torch.manual_seed(0)
model = getattr(torchvision.models, arch)(weights=None).eval()
x = torch.randn(1, 3, 224, 224)
# Grad stays enabled: torch 1.13's inference fast path for attention has no ONNX export.
torch.onnx.export(model, x, out, opset_version=13, input_names=["input"], output_names=["logits"],
                  do_constant_folding=False)
print(out)
