// `mcc quantize --mode dynamic` on a transformer-shaped block (tests/transforms/quantize/
// dynamic_block.h), with no calibration data: ONNX Runtime loads and runs the output close to
// its run of the float model, mcc's cpu backend matches ONNX Runtime on the output (mcc eval
// --golden with ONNX Runtime's outputs), and `--state` replays the output byte for byte.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ir/npy.h"
#include "ir/onnx_io.h"
#include "support/files.h"
#include "support/ort.h"
#include "support/run_mcc.h"
#include "transforms/fp16/transformer_block.h"
#include "transforms/quantize/dynamic_block.h"

namespace fs = std::filesystem;
using mcc::test::run_mcc;
using nlohmann::json;

TEST_CASE("quantize --mode dynamic: transformer block, ONNX Runtime runs it, cpu matches ONNX Runtime, replay") {
  mcc::test::TempDir tmp("mcc-quantize-dynamic");
  const std::string model = (tmp.path / "block.onnx").string();
  mcc::ir::save_model(mcc::test::dynamic_block(), model);
  const std::string out = (tmp.path / "dyn.onnx").string();
  const auto r = run_mcc({"quantize", model, "-o", out, "--mode", "dynamic"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const json state = json::parse(mcc::test::slurp(tmp.path / "dyn.mcc.json"));
  const json& st = state["stages"].back();
  CHECK(st["pass"] == "quantize");
  CHECK(st["options"]["mode"] == "dynamic");
  CHECK(st["options"]["dynamic_activations"] == "auto");
  CHECK(st["stats"]["layers_dynamic"] == 4);
  const auto rt = run_mcc({"quantize", model, "-o", (tmp.path / "tensor.onnx").string(), "--mode", "dynamic",
                           "--dynamic-activations", "per_tensor"});
  INFO(rt.err);
  REQUIRE(rt.code == 0);
  CHECK(json::parse(mcc::test::slurp(tmp.path / "tensor.mcc.json"))["stages"].back()["options"]["dynamic_activations"] ==
        "per_tensor");

  const auto rr = run_mcc({"quantize", model, "-o", (tmp.path / "again.onnx").string(), "--state",
                           (tmp.path / "dyn.mcc.json").string()});
  INFO(rr.err);
  REQUIRE(rr.code == 0);
  CHECK(mcc::test::slurp(tmp.path / "again.onnx") == mcc::test::slurp(out));

  REQUIRE_MESSAGE(mcc::test::have_onnxruntime(), mcc::test::kOrtMissing);
  for (const char* dir : {"golden_dyn", "golden32"})
    for (uint32_t s = 0; s < 3; ++s) {
      const fs::path d = tmp.path / dir / ("s" + std::to_string(s));
      fs::create_directories(d);
      for (auto& [name, t] : mcc::test::dynamic_block_inputs(10 + s)) mcc::ir::save_npy(t, (d / (name + ".npy")).string());
    }
  const std::string gd = (tmp.path / "golden_dyn").string(), g32 = (tmp.path / "golden32").string();
  REQUIRE(mcc::test::write_ort_outputs(out, gd));
  REQUIRE(mcc::test::write_ort_outputs(model, g32));
  for (uint32_t s = 0; s < 3; ++s)
    for (const char* y : {"output_0.npy", "output_1.npy"}) {
      const std::string sample = "s" + std::to_string(s);
      const mcc::ir::Tensor a = mcc::ir::load_npy((tmp.path / "golden_dyn" / sample / y).string());
      const mcc::ir::Tensor b = mcc::ir::load_npy((tmp.path / "golden32" / sample / y).string());
      REQUIRE(a.numel() == b.numel());
      double ab = 0, aa = 0, bb = 0;
      for (int64_t i = 0; i < a.numel(); ++i) {
        const double x = a.data<float>()[i], z = b.data<float>()[i];
        ab += x * z, aa += x * x, bb += z * z;
      }
      const double cos = ab / std::sqrt(aa * bb);
      MESSAGE(sample << " " << std::string(y) << ": ONNX Runtime dynamic int8 vs fp32 cosine " << cos);
      CHECK(cos > 0.999);
    }
  // mcc's cpu backend on the dynamic model matches ONNX Runtime's outputs for it.
  const auto ev = run_mcc({"eval", out, "--golden", gd, "--min-cosine", "0.9999", "--json"});
  INFO(ev.out << ev.err);
  CHECK(ev.code == 0);
}

TEST_CASE("convert -p 'quantize{mode=dynamic}': the Gather reads the int8 table, ONNX Runtime runs it, cpu matches, replay") {
  mcc::test::TempDir tmp("mcc-quantize-dynamic-emb");
  const std::string model = (tmp.path / "block.onnx").string();
  mcc::ir::save_model(mcc::test::transformer_block(), model);
  const std::string out = (tmp.path / "dyn.onnx").string();
  const auto r = run_mcc({"convert", model, "-o", out, "-p", "quantize{mode=dynamic}"});  // embeddings=true by default
  INFO(r.err);
  REQUIRE(r.code == 0);
  const json state = json::parse(mcc::test::slurp(tmp.path / "dyn.mcc.json"));
  CHECK(state["stages"].back()["stats"]["embedding_tables"] == 1);
  // The file's Gather reads int8 codes; the float rows come from a DequantizeLinear after it.
  const mcc::ir::Model written = mcc::ir::load_model(out);
  const mcc::ir::Node* dq = written.graph->find_value("tok")->producer;
  REQUIRE(dq != nullptr);
  CHECK(dq->op_type == "DequantizeLinear");
  const mcc::ir::Node* gather = dq->inputs[0]->producer;
  REQUIRE(gather != nullptr);
  CHECK(gather->op_type == "Gather");
  REQUIRE(gather->inputs[0]->initializer);
  CHECK(gather->inputs[0]->initializer->dtype() == mcc::ir::DType::I8);
  const auto rr = run_mcc({"convert", model, "-o", (tmp.path / "again.onnx").string(), "--state",
                           (tmp.path / "dyn.mcc.json").string()});
  INFO(rr.err);
  REQUIRE(rr.code == 0);
  CHECK(mcc::test::slurp(tmp.path / "again.onnx") == mcc::test::slurp(out));

  REQUIRE_MESSAGE(mcc::test::have_onnxruntime(), mcc::test::kOrtMissing);
  fs::create_directories(tmp.path / "golden" / "s0");
  mcc::ir::save_npy(mcc::test::transformer_block_ids(), (tmp.path / "golden" / "s0" / "ids.npy").string());
  const std::string gd = (tmp.path / "golden").string();
  REQUIRE(mcc::test::write_ort_outputs(out, gd));
  const auto ev = run_mcc({"eval", out, "--golden", gd, "--min-cosine", "0.9999", "--json"});
  INFO(ev.out << ev.err);
  CHECK(ev.code == 0);
  // ONNX Runtime with its default graph optimisations (ORT_ENABLE_ALL) loads and runs it too.
  const std::string run_default = "python3 -c \"import sys, numpy as np, onnxruntime as ort; "
                                  "s = ort.InferenceSession(sys.argv[1], providers=['CPUExecutionProvider']); "
                                  "s.run(None, {'ids': np.load(sys.argv[2])})\" '" + out + "' '" +
                                  (tmp.path / "golden" / "s0" / "ids.npy").string() + "'";
  CHECK(std::system(run_default.c_str()) == 0);
}
