// fold_constants: evaluate nodes whose inputs are all constant with the real cpu kernels, and
// turn Constant nodes into initializers.
//
// Before:  s = Constant{value=[2]}   y = Mul(W, s)   z = Conv(x, y)
// After:   z = Conv(x, y)            (y: initializer holding W*2, same name)
//
// Formula: y = kernel(node)(initializers), the same Eigen kernel `mcc eval` runs, so a folded
// value is bit-identical to what the cpu backend computes at run time.
// Does not apply when:
//   - an input is not constant (a graph input, even with an initializer, may be fed);
//   - the op holds subgraphs (If/Loop/Scan) or is random or stateful (RandomNormal, RandomUniform,
//     *Like, Multinomial, Bernoulli, Dropout: handled by eliminate_identity);
//   - the op is DequantizeLinear: folding it would turn a QDQ model's int8 weights back to float;
//   - an output is not a tensor (sequences, optionals) or the op is in a custom domain the cpu
//     backend has no kernel for (unsupported kernels and kernel errors skip the node: a branch
//     that never runs must not fail the stage);
//   - the result would be larger than constant_size_limit bytes (checked before running for
//     ConstantOfShape/Expand/Tile/Range and values with a declared static shape, after running
//     for everything else);
//   - the result is larger than 4 KiB and an input larger than 4 KiB has other consumers: the old
//     initializer stays alive and folding would duplicate it (Transpose of a shared weight).
// Numerical notes: none; the kernel is the one the cpu backend runs.
#include <algorithm>
#include <set>
#include <string>

#include <spdlog/spdlog.h>

#include "backends/executor.h"
#include "ir/op_facts.h"
#include "transforms/fold/fold.h"

namespace mcc::transforms::fold {
namespace {

constexpr size_t kShareBytes = 4096;

// Besides the random ops (ir::draws_random_values).
const std::set<std::string, std::less<>> kNeverFold = {"If", "Loop", "Scan", "DequantizeLinear"};

size_t bytes_for(ir::DType dt, const std::vector<int64_t>& dims) {
  const int bits = ir::info(dt).bits;
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(std::max<int64_t>(d, 0));
  const double b = n * std::max(bits, 8) / 8.0;
  return b > 1e18 ? static_cast<size_t>(1e18) : static_cast<size_t>(b);
}

std::vector<int64_t> ints_of(const ir::Tensor& t) {
  std::vector<int64_t> v;
  if (t.dtype() == ir::DType::I64) v.assign(t.data<int64_t>().begin(), t.data<int64_t>().end());
  else if (t.dtype() == ir::DType::I32) for (int32_t x : t.data<int32_t>()) v.push_back(x);
  return v;
}

// Bytes the node's result will take, when it can be told before running it (0: unknown).
size_t predicted_bytes(const ir::Node& n) {
  auto c = [&](size_t i) { return n.input(i) ? &*n.input(i)->initializer : nullptr; };
  if (n.op_type == "ConstantOfShape" && c(0)) {
    const ir::Tensor* v = n.attr_tensor("value");
    return bytes_for(v ? v->dtype() : ir::DType::F32, ints_of(*c(0)));
  }
  if ((n.op_type == "Expand" || n.op_type == "Tile") && c(0) && c(1)) {
    std::vector<int64_t> a = c(0)->dims(), b = ints_of(*c(1));
    if (n.op_type == "Tile") {
      for (size_t i = 0; i < a.size() && i < b.size(); ++i) a[i] *= b[i];
      return bytes_for(c(0)->dtype(), a);
    }
    const size_t r = std::max(a.size(), b.size());
    std::vector<int64_t> o(r, 1);
    for (size_t i = 0; i < r; ++i) {
      const int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1, y = i < b.size() ? b[b.size() - 1 - i] : 1;
      o[r - 1 - i] = std::max(x, y);
    }
    return bytes_for(c(0)->dtype(), o);
  }
  if (n.op_type == "Range" && c(0) && c(1) && c(2) && c(0)->numel() == 1) {
    auto as_d = [](const ir::Tensor& t) {
      double v = 0;
      ir::dispatch<MCC_NUMERIC_DTYPES>(t.dtype(), "Range", [&](auto tag) {
        using T = typename decltype(tag)::type;
        v = static_cast<double>(static_cast<float>(t.data<T>()[0]));
      });
      return v;
    };
    const double d = as_d(*c(2));
    if (d == 0) return 0;
    const double cnt = std::max(0.0, std::ceil((as_d(*c(1)) - as_d(*c(0))) / d));
    return bytes_for(c(0)->dtype(), {static_cast<int64_t>(std::min(cnt, 1e15))});
  }
  size_t total = 0;
  for (const ir::Value* o : n.outputs) {
    if (!o) continue;
    auto d = o->shape.static_dims();
    if (!d || o->dtype == ir::DType::Undefined) return 0;
    total += bytes_for(o->dtype, *d);
  }
  return total;
}

class ConstantFolder {
 public:
  ConstantFolder(const FoldConfig& cfg) : cfg_(cfg) {
    dummy_.graph = std::make_unique<ir::Graph>();
    exec_ = std::make_unique<backends::Executor>(dummy_, backends::ExecOptions{cfg.threads});
  }

  bool try_fold(ir::Graph& g, ir::Node& n, RewriteLog& log) {
    if (!(n.domain.empty() || n.domain == "ai.onnx")) return false;
    if (kNeverFold.count(n.op_type) || ir::draws_random_values(n.op_type) || !n.subgraphs().empty())
      return false;
    bool any_input = false;
    for (const ir::Value* v : n.inputs) {
      if (!v) continue;
      if (!is_constant(v)) return false;
      any_input = true;
    }
    const bool is_constant_node = n.op_type == "Constant";
    if (!any_input && !is_constant_node) return false;  // only Constant is safe without inputs
    for (const ir::Value* o : n.outputs)
      if (o && !o->type_passthrough.bytes.empty()) return false;  // declared non-tensor output
    bool used = false;
    for (const ir::Value* o : n.outputs) used = used || (o && (!o->uses.empty() || is_any_graph_output(*o)));
    if (!used) return false;  // dead: eliminate_dead_code removes it without running it

    if (!is_constant_node) {
      const size_t predicted = predicted_bytes(n);
      if (predicted > static_cast<size_t>(cfg_.constant_size_limit)) return skip(n, log, "larger than constant_size_limit");
    }

    std::vector<ir::Tensor> results;
    try {
      backends::Kernel k = backends::cpu_backend().create_kernel(n);
      std::vector<backends::RValue> vals;
      vals.reserve(n.inputs.size());
      for (const ir::Value* v : n.inputs) vals.push_back(v ? backends::RValue::of(*v->initializer) : backends::RValue::none());
      std::vector<const backends::RValue*> ptrs;
      for (size_t i = 0; i < n.inputs.size(); ++i) ptrs.push_back(n.inputs[i] ? &vals[i] : nullptr);
      backends::KernelContext kc(n, std::move(ptrs), *exec_, backends::cpu_backend());
      k(kc);
      for (size_t i = 0; i < n.outputs.size(); ++i) {
        auto& rv = kc.outputs()[i];
        if (!n.outputs[i]) { results.emplace_back(); continue; }
        if (rv.kind != backends::RValue::Kind::Tensor || !rv.tensor.defined()) return false;
        results.push_back(std::move(rv.tensor));
      }
    } catch (const Error& e) {
      spdlog::debug("fold: {} not folded: {}", n.describe(), e.what());
      return false;
    } catch (const std::bad_alloc&) {
      return skip(n, log, "out of memory while folding");
    }

    size_t out_bytes = 0;
    for (const auto& t : results) out_bytes += t.defined() ? t.nbytes() : 0;
    if (!is_constant_node) {
      if (out_bytes > static_cast<size_t>(cfg_.constant_size_limit)) return skip(n, log, "larger than constant_size_limit");
      if (out_bytes > kShareBytes)
        for (const ir::Value* v : n.inputs)
          if (v && v->initializer->nbytes() > kShareBytes && shared(*v, n))
            return skip(n, log, "would duplicate shared initializer '" + v->name + "'");
    }
    for (auto& t : results)
      if (t.defined() && t.buffer() && !t.buffer()->writable()) t = t.clone();  // own the bytes
    const std::string name = n.name.empty() && n.outputs[0] ? n.outputs[0]->name : n.name;
    replace_with_constants(g, n, std::move(results));
    log.add(is_constant_node ? "constant_nodes_to_initializers" : "constants_folded", name);
    return true;
  }

 private:
  static bool shared(const ir::Value& v, const ir::Node& n) {
    if (is_any_graph_output(v)) return true;
    for (const ir::Use& u : v.uses)
      if (u.user != &n) return true;
    return false;
  }
  bool skip(const ir::Node& n, RewriteLog& log, const std::string& why) {
    spdlog::debug("fold: {} not folded: {}", n.describe(), why);
    log.add_once("constants_not_folded", n.name + ": " + why);
    return false;
  }

  const FoldConfig& cfg_;
  ir::Model dummy_;
  std::unique_ptr<backends::Executor> exec_;
};

}  // namespace

int64_t fold_constants(ir::Model& m, const FoldConfig& cfg, RewriteLog& log) {
  ConstantFolder folder(cfg);
  return RewriteDriver()
      .on({}, [&](ir::Graph& g, ir::Node& n, RewriteLog& l) { return folder.try_fold(g, n, l); })
      .recurse_subgraphs(cfg.subgraphs)
      .run(*m.graph, log);
}

}  // namespace mcc::transforms::fold
