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
#include <string>

#include <spdlog/spdlog.h>

#include "backends/constant_nodes.h"
#include "backends/executor.h"
#include "transforms/fold/fold.h"

namespace mcc::transforms::fold {
namespace {

constexpr size_t kShareBytes = 4096;

class ConstantFolder {
 public:
  ConstantFolder(const FoldConfig& cfg) : cfg_(cfg) {
    dummy_.graph = std::make_unique<ir::Graph>();
    exec_ = std::make_unique<backends::Executor>(dummy_, backends::ExecOptions{cfg.threads});
  }

  bool try_fold(ir::Graph& g, ir::Node& n, RewriteLog& log) {
    if (!backends::computable_ahead(n)) return false;
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
      const size_t predicted = backends::predicted_output_bytes(
          n, [&](size_t i) -> const ir::Tensor* { return &*n.inputs[i]->initializer; });
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
