// Hostile model, test-data and .npy files: sizes that overflow or that the file does not hold,
// external data beyond its file, subgraphs nested 10000 deep, cycles, and a million nodes. Each
// is refused with one ModelError line (exit 3 from the CLI) before anything large is allocated,
// or, for the million nodes, loaded, verified and written back in bounded time.
#include <doctest/doctest.h>
#include <onnx/onnx-data_pb.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "ir/import_limits.h"
#include "ir/text_escape.h"
#include "ir/npy.h"
#include "ir/onnx_io.h"
#include "ir/verifier.h"
#include "support/files.h"
#include "support/paths.h"
#include "support/run_mcc.h"

namespace fs = std::filesystem;
using namespace mcc;
using mcc::test::spit;

namespace {

/// Model bytes: input X (f32[1]), Y = Identity(X), and `extra` applied to the graph.
std::string model_bytes(const std::function<void(onnx::GraphProto&)>& extra) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* x = g->add_input();
  x->set_name("X");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* n = g->add_node();
  n->set_op_type("Identity");
  n->add_input("X");
  n->add_output("Y");
  auto* y = g->add_output();
  y->set_name("Y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  extra(*g);
  return m.SerializeAsString();
}

/// A model holding one initializer W built by `fill`.
std::string model_with_tensor(const std::function<void(onnx::TensorProto&)>& fill) {
  return model_bytes([&](onnx::GraphProto& g) {
    auto* t = g.add_initializer();
    t->set_name("W");
    fill(*t);
  });
}

/// The ModelError text of loading `bytes` (from `dir` for external data); "LOADED" or "WRONG
/// TYPE: ..." otherwise.
std::string load_error(const std::string& bytes, const std::string& dir = ".") {
  try {
    ir::Model m = ir::load_model_from_bytes(bytes, dir);
    ir::verify(m);
  } catch (const ModelError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("WRONG TYPE: ") + e.what();
  }
  return "LOADED";
}

/// Runs `mcc inspect` on `bytes` written to a file: exit code and stderr.
test::RunResult inspect(const std::string& bytes) {
  test::TempDir dir("mcc-hostile");
  const fs::path file = dir.path / "model.onnx";
  spit(file, bytes);
  return test::run_mcc({"inspect", file.string()});
}

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

/// `depth` If nodes, each holding the next in its then_branch (encoded inside out, so neither
/// this test nor protobuf's encoder recurses).
std::string nested_if_model(int depth) {
  onnx::GraphProto leaf;
  leaf.set_name("leaf");
  auto* n = leaf.add_node();
  n->set_op_type("Identity");
  n->add_input("c");
  n->add_output("y");
  leaf.add_output()->set_name("y");
  const std::string leaf_bytes = leaf.SerializeAsString();
  auto ld = [](int field, const std::string& payload) {
    std::string out;
    uint64_t tag = static_cast<uint64_t>(field) << 3 | 2, len = payload.size();
    for (uint64_t v : {tag, len}) {
      while (v >= 0x80) { out += static_cast<char>(v | 0x80); v >>= 7; }
      out += static_cast<char>(v);
    }
    return out + payload;
  };
  onnx::ValueInfoProto y;
  y.set_name("y");
  y.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  std::string graph = leaf_bytes;
  for (int i = 0; i < depth; ++i) {
    // AttributeProto: name (1), type GRAPH = 5 (field 20, varint), g (6).
    const std::string then_attr = ld(1, "then_branch") + std::string("\xa0\x01\x05", 3) + ld(6, graph);
    const std::string else_attr = ld(1, "else_branch") + std::string("\xa0\x01\x05", 3) + ld(6, leaf_bytes);
    const std::string node = ld(1, "c") + ld(2, "y") + ld(4, "If") + ld(5, then_attr) + ld(5, else_attr);
    graph = ld(1, node) + ld(2, "g" + std::to_string(i)) + ld(12, y.SerializeAsString());
  }
  onnx::ValueInfoProto c;
  c.set_name("c");
  c.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  graph += ld(11, c.SerializeAsString());
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  return m.SerializeAsString() + ld(7, graph);
}

}  // namespace

TEST_CASE("hostile: claimed tensor sizes are checked against the data before allocating") {
  SUBCASE("dims whose element count overflows int64") {
    const auto e = load_error(model_with_tensor([](onnx::TensorProto& t) {
      t.set_data_type(onnx::TensorProto::FLOAT);
      t.add_dims(int64_t{1} << 62);
      t.add_dims(4);
      t.set_raw_data(std::string(4, '\0'));
    }));
    CHECK(e.find("overflows int64") != std::string::npos);
  }
  SUBCASE("an element count within int64 whose byte size is not") {
    const auto e = load_error(model_with_tensor([](onnx::TensorProto& t) {
      t.set_data_type(onnx::TensorProto::DOUBLE);
      t.add_dims(int64_t{1} << 61);
      t.set_raw_data(std::string(8, '\0'));
    }));
    CHECK(e.find("would exceed 2^63 bytes") != std::string::npos);
  }
  SUBCASE("a byte size that wraps size_t arithmetic to the raw_data length") {
    // 2^58 + 1 doubles: numel * 64 bits wraps to 64 bits = 8 bytes in 64-bit arithmetic.
    const auto e = load_error(model_with_tensor([](onnx::TensorProto& t) {
      t.set_data_type(onnx::TensorProto::DOUBLE);
      t.add_dims((int64_t{1} << 58) + 1);
      t.set_raw_data(std::string(8, '\0'));
    }));
    CHECK(e.find("raw_data holds 8 bytes, the dims claim 2305843009213693960") != std::string::npos);
  }
  SUBCASE("raw_data shorter and longer than the dims") {
    for (size_t len : {4u, 16u}) {
      const auto e = load_error(model_with_tensor([&](onnx::TensorProto& t) {
        t.set_data_type(onnx::TensorProto::FLOAT);
        t.add_dims(3);
        t.set_raw_data(std::string(len, '\0'));
      }));
      CHECK(e.find("raw_data holds " + std::to_string(len) + " bytes, the dims claim 12") != std::string::npos);
    }
  }
  SUBCASE("a huge typed tensor with a few values") {
    const auto e = load_error(model_with_tensor([](onnx::TensorProto& t) {
      t.set_data_type(onnx::TensorProto::FLOAT);
      t.add_dims(int64_t{1} << 40);
      t.add_float_data(1.0f);
    }));
    CHECK(e.find("float_data holds 1 values") != std::string::npos);
  }
  SUBCASE("a huge string tensor with no strings") {
    const auto e = load_error(model_with_tensor([](onnx::TensorProto& t) {
      t.set_data_type(onnx::TensorProto::STRING);
      t.add_dims(int64_t{1} << 40);
    }));
    CHECK(e.find("string tensor holds 0 values") != std::string::npos);
  }
  SUBCASE("the CLI: exit 3, one line") {
    const auto r = inspect(model_with_tensor([](onnx::TensorProto& t) {
      t.set_data_type(onnx::TensorProto::DOUBLE);
      t.add_dims((int64_t{1} << 58) + 1);
      t.set_raw_data(std::string(8, '\0'));
    }));
    CHECK(r.code == 3);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find("tensor 'W'") != std::string::npos);
  }
}

TEST_CASE("hostile: tensor sizes in limits::tensor_bytes") {
  CHECK(ir::limits::tensor_bytes(ir::DType::F32, {2, 3}) == 24);
  CHECK(ir::limits::tensor_bytes(ir::DType::U4, {3}) == 2);
  CHECK(ir::limits::tensor_bytes(ir::DType::F32, {}) == 4);
  CHECK(ir::limits::tensor_bytes(ir::DType::F32, {0, int64_t{1} << 62}) == 0);
  CHECK(ir::limits::tensor_bytes(ir::DType::String, {5}) == 0);
  CHECK(ir::limits::tensor_bytes(ir::DType::U8, {INT64_MAX}) == static_cast<uint64_t>(INT64_MAX));
  CHECK_THROWS_AS(ir::limits::tensor_bytes(ir::DType::U16, {INT64_MAX}), ModelError);
  CHECK_THROWS_AS(ir::limits::tensor_bytes(ir::DType::F32, {-1}), ModelError);
  CHECK(ir::printable_line("a\nb\x01") == "a\\x0ab\\x01");
  CHECK(ir::printable_line(std::string(100, 'x'), 4) == "xxxx...");
}

TEST_CASE("hostile: external data claiming bytes beyond its file") {
  test::TempDir dir("mcc-hostile-ext");
  spit(dir.path / "w.bin", std::string(16, '\x01'));
  auto external = [&](const std::string& offset, const std::string& length, int64_t dim) {
    return load_error(model_with_tensor([&](onnx::TensorProto& t) {
      t.set_data_type(onnx::TensorProto::FLOAT);
      t.add_dims(dim);
      t.set_data_location(onnx::TensorProto::EXTERNAL);
      auto add = [&](const char* k, const std::string& v) {
        if (v.empty()) return;
        auto* e = t.add_external_data();
        e->set_key(k);
        e->set_value(v);
      };
      add("location", "w.bin");
      add("offset", offset);
      add("length", length);
    }), dir.path.string());
  };
  CHECK(external("0", "16", 4) == "LOADED");
  CHECK(external("1000", "4", 1).find("too short") != std::string::npos);
  CHECK(external("8", "16", 4).find("too short") != std::string::npos);
  CHECK(external("9223372036854775807", "16", 4).find("too short") != std::string::npos);
  CHECK(external("0", "18446744073709551615", 4).find("not a non-negative integer") != std::string::npos);
  CHECK(external("-8", "4", 1).find("not a non-negative integer") != std::string::npos);
  // The file holds 16 bytes, the dims claim 2^40 floats: refused, nothing mapped beyond the file.
  CHECK(external("0", "", int64_t{1} << 40).find("external data holds 16 bytes") != std::string::npos);
  // 2^58 + 1 doubles wrap to 8 bytes in 64-bit arithmetic; the file's 8 bytes must not pass.
  CHECK(load_error(model_with_tensor([&](onnx::TensorProto& t) {
          t.set_data_type(onnx::TensorProto::DOUBLE);
          t.add_dims((int64_t{1} << 58) + 1);
          t.set_data_location(onnx::TensorProto::EXTERNAL);
          auto* e = t.add_external_data();
          e->set_key("location");
          e->set_value("w.bin");
          e = t.add_external_data();
          e->set_key("length");
          e->set_value("8");
        }), dir.path.string())
            .find("external data holds 8 bytes") != std::string::npos);
}

TEST_CASE("hostile: subgraphs nested 10000 deep are refused at parse, without recursion") {
  const std::string ok = nested_if_model(20);
  CHECK(load_error(ok) == "LOADED");
  const std::string deep = nested_if_model(10000);
  const auto e = load_error(deep);
  CHECK(e.find("nested deeper than 100 levels") != std::string::npos);
  const auto r = inspect(deep);
  CHECK(r.code == 3);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find("nested deeper") != std::string::npos);
}

TEST_CASE("hostile: cyclic graphs are refused on import") {
  SUBCASE("a chain through three nodes") {
    const auto bytes = model_bytes([](onnx::GraphProto& g) {
      for (auto [in, out] : {std::pair{"c", "a"}, {"a", "b"}, {"b", "c"}}) {
        auto* n = g.add_node();
        n->set_op_type("Relu");
        n->set_name(std::string("r_") + out);
        n->add_input(in);
        n->add_output(out);
      }
    });
    CHECK(load_error(bytes).find("has a cycle through") != std::string::npos);
    const auto r = inspect(bytes);
    CHECK(r.code == 3);
    CHECK(lines(r.err) == 1);
  }
  SUBCASE("a node using its own output") {
    const auto bytes = model_bytes([](onnx::GraphProto& g) {
      auto* n = g.add_node();
      n->set_op_type("Add");
      n->add_input("X");
      n->add_input("s");
      n->add_output("s");
    });
    CHECK(load_error(bytes).find("cycle") != std::string::npos);
  }
}

namespace {

/// A chain of `n` Relu nodes, X -> x1 -> ... -> xn.
std::string relu_chain(int n) {
  return model_bytes([n](onnx::GraphProto& g) {
    g.clear_output();
    g.mutable_node()->Reserve(n + 1);
    std::string prev = "X";
    for (int i = 1; i <= n; ++i) {
      auto* node = g.add_node();
      node->set_op_type("Relu");
      node->add_input(prev);
      prev = "x" + std::to_string(i);
      node->add_output(prev);
    }
    auto* out = g.add_output();
    out->set_name(prev);
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  });
}

/// Load + verify + serialize of `bytes`; seconds taken.
double round_trip_seconds(const std::string& bytes, size_t want_nodes) {
  const auto t0 = std::chrono::steady_clock::now();
  ir::Model m = ir::load_model_from_bytes(bytes, ".");
  ir::verify(m);
  CHECK(m.graph->nodes().size() == want_nodes);
  const std::string out = ir::serialize_model(m);
  CHECK(out.size() > bytes.size() / 2);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("hostile: a chain of 100000 nodes loads, verifies and exports without recursion") {
  const double s = round_trip_seconds(relu_chain(100000), 100001);
  MESSAGE("100000 nodes: load + verify + serialize in " << s << " s");
  CHECK(s < 30);
}

TEST_CASE("hostile: a chain of 10^6 nodes loads, verifies and exports in bounded time" *
          doctest::test_suite("large")) {
  const double s = round_trip_seconds(relu_chain(1000000), 1000001);
  MESSAGE("10^6 nodes: load + verify + serialize in " << s << " s");
  CHECK(s < 120);
}

TEST_CASE("hostile: test-data .pb files with sizes they do not hold") {
  test::TempDir dir("mcc-hostile-pb");
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::DOUBLE);
  t.add_dims((int64_t{1} << 58) + 1);
  t.set_raw_data(std::string(8, '\0'));
  const fs::path p = dir.path / "input_0.pb";
  spit(p, t.SerializeAsString());
  std::string e = "LOADED";
  try {
    (void)ir::load_tensor_pb(p.string());
  } catch (const ModelError& err) {
    e = err.what();
  }
  CHECK(e.find("the dims claim") != std::string::npos);
}
