#!/usr/bin/python3
"""Exports small streaming models whose work sits inside ONNX Loop and If bodies, for
bench/cpu_vs_ort.py (seeded random weights; Debian's python3-torch: run with /usr/bin/python3).

  loop_gru_frames.onnx   a GRU cell written out (Linear, Sigmoid, Tanh) stepped over the frames of
                         its input in a scripted loop (ONNX Loop, trip count from the input's
                         length), each step's state through a LayerNorm and a Linear head
  loop_if_gate.onnx      the same loop with an If in its body: frames whose energy is below a
                         threshold skip the cell and keep the state (a VAD-like gate)

usage: /usr/bin/python3 bench/export_loop_models.py [--out build/bench_models]
"""
import argparse
import os

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class FrameGru(torch.nn.Module):
    def __init__(self, feat=64, hidden=128, classes=8, gate=False):
        super().__init__()
        self.x2h = torch.nn.Linear(feat, 3 * hidden)
        self.h2h = torch.nn.Linear(hidden, 3 * hidden)
        self.norm = torch.nn.LayerNorm(hidden)
        self.head = torch.nn.Linear(hidden, classes)
        self.hidden = hidden
        self.gate = gate

    def step(self, x, h):
        gx = self.x2h(x)
        gh = self.h2h(h)
        H = self.hidden
        r = torch.sigmoid(gx[:, :H] + gh[:, :H])
        z = torch.sigmoid(gx[:, H:2 * H] + gh[:, H:2 * H])
        n = torch.tanh(gx[:, 2 * H:] + r * gh[:, 2 * H:])
        return (1 - z) * n + z * h

    def forward(self, frames, h):
        outs = []
        for t in range(frames.size(1)):
            x = frames[:, t]
            if self.gate:
                if bool((x * x).mean() > 0.3):
                    h = self.step(x, h)
            else:
                h = self.step(x, h)
            outs.append(self.head(self.norm(h)))
        return torch.stack(outs, 1), h


def export(model, path):
    torch.manual_seed(0)
    scripted = torch.jit.script(model.eval())
    frames = torch.randn(1, 50, 64)
    h = torch.zeros(1, 128)
    torch.onnx.export(scripted, (frames, h), path, input_names=["frames", "h0"], output_names=["logits", "h"],
                      dynamic_axes={"frames": {1: "T"}}, opset_version=13)
    print("wrote", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench_models"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    export(FrameGru(), os.path.join(a.out, "loop_gru_frames.onnx"))
    torch.manual_seed(0)
    export(FrameGru(gate=True), os.path.join(a.out, "loop_if_gate.onnx"))


if __name__ == "__main__":
    main()
