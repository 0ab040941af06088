// End-to-end tests of `mcc eval` and `mcc bench` on the bundled golden cases: every golden case
// passes against ONNX Runtime's outputs, the verdict and exit code follow the rules, --json and
// --save-outputs work, and bad requests exit with the documented codes.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "ir/npy.h"
#include "ir/onnx_io.h"
#include "support/run_mcc.h"

namespace fs = std::filesystem;
using mcc::test::run_mcc;

namespace {
std::string golden(const std::string& c) { return (mcc::test::source_dir() / "golden" / c).string(); }
}  // namespace

TEST_CASE("eval: every golden case matches ONNX Runtime's outputs on the cpu backend") {
  int cases = 0;
  for (const auto& e : fs::directory_iterator(mcc::test::source_dir() / "golden")) {
    if (!fs::exists(e.path() / "model.onnx")) continue;
    ++cases;
    const auto r = run_mcc({"eval", (e.path() / "model.onnx").string(), "--golden", e.path().string(), "--json", "--threads", "2"});
    INFO(e.path().filename().string() << ": " << r.err);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["passed"] == true);
    CHECK(j["against"] == "golden");
    CHECK(j["outputs"].size() >= 1);
    for (const auto& o : j["outputs"]) CHECK(o["min_cosine"].get<double>() > 0.9999);
  }
  CHECK(cases >= 3);
}

TEST_CASE("eval: a verdict that cannot be met exits 1 with one line naming the output") {
  const auto r = run_mcc({"eval", golden("mnist") + "/model.onnx", "--golden", golden("mnist"), "--min-cosine", "1.5"});
  CHECK(r.code == 1);
  CHECK(r.err.find("accuracy check failed: output 'Plus214_Output_0'") != std::string::npos);
  CHECK(r.out.find("verdict: FAIL") != std::string::npos);
}

TEST_CASE("eval: a model against itself as reference passes with identical outputs") {
  const auto r = run_mcc({"eval", golden("mnist") + "/model.onnx", "--reference", golden("mnist") + "/model.onnx",
                          "--inputs", golden("mnist"), "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["against"] == "reference");
  CHECK(j["outputs"][0]["max_abs"].get<double>() == 0.0);
  CHECK(j["samples"] == 3);
}

TEST_CASE("eval: --save-outputs writes output_K.npy per sample that match the golden outputs") {
  mcc::test::TempDir tmp("mcc-eval");
  const auto r = run_mcc({"eval", golden("mnist") + "/model.onnx", "--inputs", golden("mnist"), "--save-outputs", tmp.path.string()});
  REQUIRE(r.code == 0);
  const auto saved = mcc::ir::load_npy((tmp.path / "digit_0" / "output_0.npy").string());
  const auto want = mcc::ir::load_npy(golden("mnist") + "/digit_0/output_0.npy");
  REQUIRE(saved.dims() == want.dims());
  for (int64_t i = 0; i < want.numel(); ++i) CHECK(std::abs(saved.data<float>()[i] - want.data<float>()[i]) < 1e-4f);
}

TEST_CASE("eval: random inputs are seeded and reproducible") {
  mcc::test::TempDir a("mcc-eval-a"), b("mcc-eval-b");
  REQUIRE(run_mcc({"eval", golden("mnist") + "/model.onnx", "--random", "7", "--save-outputs", a.path.string()}).code == 0);
  REQUIRE(run_mcc({"eval", golden("mnist") + "/model.onnx", "--random", "7", "--save-outputs", b.path.string()}).code == 0);
  CHECK(mcc::test::slurp(a.path / "random_0" / "output_0.npy") == mcc::test::slurp(b.path / "random_0" / "output_0.npy"));
}

TEST_CASE("eval: bad requests exit with the documented codes and one line") {
  const std::string m = golden("mnist") + "/model.onnx";
  auto r = run_mcc({"eval", m});
  CHECK(r.code == 2);
  CHECK(mcc::test::one_error_line(r.err));
  r = run_mcc({"eval", m, "--golden", "/nonexistent/dir"});
  CHECK(r.code == 3);
  CHECK(mcc::test::one_error_line(r.err));
  r = run_mcc({"eval", m, "--golden", golden("yolox_nano")});  // inputs that belong to another model
  CHECK(r.code == 3);
  CHECK(mcc::test::one_error_line(r.err));
  {
    // Without a GPU: exit 5, one line naming the cause, no output files. With one: it runs there.
    mcc::test::TempDir out("mcc-eval-cuda");
    const auto saved = out.path / "outputs";
    r = run_mcc({"eval", m, "--golden", golden("mnist"), "--backend", "cuda", "--save-outputs", saved.string()});
    if (r.code == 5) {
      CHECK(mcc::test::one_error_line(r.err));
#if defined(MCC_HAVE_CUDA)
      CHECK(r.err.find("no CUDA device was found") != std::string::npos);
#else
      CHECK(r.err.find("this mcc build has no cuda backend") != std::string::npos);
#endif
      CHECK_FALSE(fs::exists(saved));
    } else {
      MESSAGE("a CUDA device is present: eval ran on it");
      CHECK(r.code == 0);
      CHECK(fs::exists(saved));
    }
  }
  r = run_mcc({"eval", m, "--golden", golden("mnist"), "--backend", "tpu"});
  CHECK(r.code == 2);
  r = run_mcc({"eval", m, "--golden", golden("mnist"), "--atol", "abc"});
  CHECK(r.code == 2);
}

TEST_CASE("eval: wrong input shape is exit 3 naming the input and both shapes") {
  mcc::test::TempDir tmp("mcc-eval-shape");
  fs::create_directories(tmp.path / "s0");
  mcc::ir::save_npy(mcc::ir::Tensor::allocate(mcc::ir::DType::F32, {1, 1, 28, 27}), (tmp.path / "s0" / "Input3.npy").string());
  const auto r = run_mcc({"eval", golden("mnist") + "/model.onnx", "--inputs", tmp.path.string()});
  CHECK(r.code == 3);
  CHECK(r.err.find("'Input3'") != std::string::npos);
  CHECK(r.err.find("[1x1x28x27]") != std::string::npos);
}

TEST_CASE("bench: reports median and p90 latency as JSON") {
  const auto r = run_mcc({"bench", golden("mnist") + "/model.onnx", "--runs", "5", "--warmup", "1", "--threads", "1", "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["median_ms"].get<double>() > 0);
  CHECK(j["p90_ms"].get<double>() >= j["median_ms"].get<double>());
  CHECK(j["threads"] == 1);
  CHECK(j["runs"] == 5);
  // The CPU and the kernels' instruction sets, printed with every timing.
  const std::string isa = j["cpu"]["matmul_f32_isa"].get<std::string>();
  CHECK((isa == "avx512" || isa == "avx2" || isa == "eigen"));
  CHECK(!j["cpu"]["model"].get<std::string>().empty());
  CHECK(!j["cpu"]["build_isa"].get<std::string>().empty());
  const std::string kernels = j["cpu"]["kernels_isa"].get<std::string>();
  CHECK((kernels == "avx512-vnni-vbmi" || kernels == "avx512-vnni" || kernels == "avx512" ||
         kernels == "avx2" || kernels == "portable"));
  // MCC_CPU_ISA=avx2 turns the AVX-512 kernels off, whatever the build's -march.
  mcc::test::TempDir io("mcc-bench-isa");
  const auto capped = mcc::test::run_process({"env", "MCC_CPU_ISA=avx2", mcc::test::mcc_binary().string(), "bench",
                                              golden("mnist") + "/model.onnx", "--runs", "2", "--warmup", "1",
                                              "--threads", "1", "--json"},
                                             io.path, "isa");
  REQUIRE(capped.code == 0);
  const auto jc = nlohmann::json::parse(capped.out);
  CHECK(jc["cpu"]["kernels_isa"].get<std::string>().rfind("avx512", 0) != 0);
  CHECK(jc["cpu"]["matmul_f32_isa"].get<std::string>() != "avx512");
  CHECK(run_mcc({"bench", golden("mnist") + "/model.onnx", "--runs", "0"}).code == 2);
}

TEST_CASE("bench: a cpu run does not load cuBLAS (peak RSS of the MNIST run well under its ~150 MB)") {
  const auto r = run_mcc({"bench", golden("mnist") + "/model.onnx", "--runs", "3", "--warmup", "1", "--threads", "1", "--json"});
  REQUIRE(r.code == 0);
  const double rss = nlohmann::json::parse(r.out)["peak_rss_mb"].get<double>();
  CHECK(rss > 1.0);
  CHECK(rss < 64.0);
}

TEST_CASE("bench: an input declared with dim -1 takes any size; a file named after an input_K input feeds it") {
  mcc::test::TempDir tmp;
  auto m = mcc::ir::load_model(golden("mnist") + "/model.onnx");
  mcc::ir::Value* in = m.graph->inputs.front();
  REQUIRE(in->shape.dims);
  (*in->shape.dims)[0] = mcc::ir::Dim::of(-1);  // paddle2onnx writes unknown dims this way
  m.graph->rename_value(*in, "input_1");          // Keras exports name inputs input_1
  const std::string path = (tmp.path / "m.onnx").string();
  mcc::ir::save_model(m, path);
  fs::create_directories(tmp.path / "s");
  mcc::ir::save_npy(mcc::ir::load_npy(golden("mnist") + "/digit_0/Input3.npy"), (tmp.path / "s" / "input_1.npy").string());
  const auto r = run_mcc({"bench", path, "--inputs", (tmp.path / "s").string(), "--runs", "2", "--warmup", "0", "--json"});
  INFO(r.err);
  CHECK(r.code == 0);
}

TEST_CASE("eval: an op the cpu backend lacks is exit 4 naming node, op and opset") {
  mcc::test::TempDir tmp("mcc-eval-unsupported");
  mcc::ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph = std::make_unique<mcc::ir::Graph>();
  auto& g = *m.graph;
  g.name = "g";
  auto& x = g.add_value("x");
  x.dtype = mcc::ir::DType::F32;
  x.shape = mcc::ir::Shape::of({2});
  x.has_type = true;
  g.inputs.push_back(&x);
  auto& n = g.add_node("FrobnicateNotAnOp", "", "frob0", {&x}, {"y"});
  n.since_version = 17;
  auto* y = n.outputs[0];
  y->dtype = mcc::ir::DType::F32;
  y->shape = mcc::ir::Shape::of({2});
  y->has_type = true;
  g.outputs.push_back(y);
  const auto path = (tmp.path / "m.onnx").string();
  mcc::ir::save_model(m, path);
  const auto r = run_mcc({"eval", path, "--random", "1"});
  CHECK(r.code == 4);
  CHECK(mcc::test::one_error_line(r.err));
  CHECK(r.err.find("frob0") != std::string::npos);
  CHECK(r.err.find("FrobnicateNotAnOp") != std::string::npos);
  CHECK(r.err.find("17") != std::string::npos);
}

TEST_CASE("eval: outputs are byte-identical across runs for a fixed thread count") {
  mcc::test::TempDir a("mcc-det-a"), b("mcc-det-b");
  const std::string m = golden("yolox_nano") + "/model.onnx";
  REQUIRE(run_mcc({"eval", m, "--inputs", golden("yolox_nano"), "--threads", "2", "--save-outputs", a.path.string()}).code == 0);
  REQUIRE(run_mcc({"eval", m, "--inputs", golden("yolox_nano"), "--threads", "2", "--save-outputs", b.path.string()}).code == 0);
  const auto x = mcc::test::slurp(a.path / "synthetic_0" / "output_0.npy");
  CHECK(x.size() > 1000000);
  CHECK(x == mcc::test::slurp(b.path / "synthetic_0" / "output_0.npy"));
}
