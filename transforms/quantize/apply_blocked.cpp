// Writing block-wise weight points (see quantize/apply_blocked.h).
#include "transforms/quantize/apply_blocked.h"

#include <cstring>
#include <functional>
#include <vector>

#include "ir/errors.h"
#include "transforms/common/node_filter.h"
#include "transforms/common/rewrite.h"
#include "transforms/quantize/apply_util.h"
#include "transforms/quantize/block_quant.h"

namespace mcc::transforms::quantize {

namespace {

BlockFormat format_of(const QPoint& p) {
  BlockFormat f;
  f.block_size = p.block_size;
  switch (p.dtype) {
    case ir::DType::I4: f.bits = 4; f.zero_point = false; break;
    case ir::DType::U4: f.bits = 4; f.zero_point = true; break;
    case ir::DType::I8: f.bits = 8; f.zero_point = false; break;
    case ir::DType::U8: f.bits = 8; f.zero_point = true; break;
    default: throw ModelError("block-wise weights are int4, uint4, int8 or uint8, not " + ir::dtype_name(p.dtype));
  }
  return f;
}

/// The point's codes for float weight w [K, N]: recorded, or rounded from the recorded scales.
std::vector<int32_t> codes_of(const QPoint& p, const ir::Tensor& w, const BlockFormat& f) {
  const int64_t K = w.dims()[0], N = w.dims()[1];
  if (!p.codes.empty()) return unpack_codes(p.codes, p.dtype, K * N);
  const auto x = w.data<float>();
  std::vector<int32_t> codes(static_cast<size_t>(K * N));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) {
      const size_t b = static_cast<size_t>((k / f.block_size) * N + n);
      codes[static_cast<size_t>(k * N + n)] = block_code(x[static_cast<size_t>(k * N + n)], {p.scale[b], p.zero_point[b]}, f);
    }
  return codes;
}

/// Code (k, n) of float weight w [K, N] for point p, read from the recorded codes or rounded from
/// the recorded scales, one at a time: MatMulNBits' layout reads them column by column, and an
/// unpacked [K, N] copy would be 4 bytes a weight (113 MB for SmolLM2's LM head).
std::function<int32_t(int64_t, int64_t)> code_reader(const QPoint& p, const ir::Tensor& w, const BlockFormat& f) {
  const int64_t K = w.dims()[0], N = w.dims()[1];
  if (!p.codes.empty()) {
    check_packed_codes(p.codes, p.dtype, K * N);
    return [&p, N](int64_t k, int64_t n) { return packed_code_at(p.codes, p.dtype, static_cast<size_t>(k * N + n)); };
  }
  const float* x = w.data<float>().data();
  return [&p, &f, x, N](int64_t k, int64_t n) {
    const size_t b = static_cast<size_t>((k / f.block_size) * N + n);
    return block_code(x[static_cast<size_t>(k * N + n)], {p.scale[b], p.zero_point[b]}, f);
  };
}

ir::Tensor bytes_tensor(ir::DType dt, const std::vector<int64_t>& dims, const std::string& bytes) {
  ir::Tensor t = ir::Tensor::allocate(dt, dims);
  if (t.nbytes() != bytes.size()) throw InternalError("bytes_tensor: size mismatch");
  if (!bytes.empty()) std::memcpy(t.mutable_raw(), bytes.data(), bytes.size());
  return t;
}

bool symmetric(const QPoint& p) { return p.dtype == ir::DType::I4 || p.dtype == ir::DType::I8; }

class BlockedWriter {
 public:
  BlockedWriter(ir::Model& m, std::set<std::string>& names) : m_(m), g_(*m.graph), names_(names) {}

  void write(const QPoint& p, bool nbits) {
    ir::Value* v = g_.find_value(p.tensor);
    if (!v) throw ModelError("no tensor '" + p.tensor + "' in the model's main graph");
    if (!v->initializer || v->initializer->dtype() != ir::DType::F32 || v->initializer->rank() != 2)
      throw ModelError("it is not a float32 constant matrix");
    if (p.axis != 0) throw ModelError("block-wise weights are blocked along axis 0 (K), not " + std::to_string(p.axis));
    const BlockFormat f = format_of(p);
    const ir::Tensor& w = *v->initializer;
    const int64_t K = w.dims()[0], N = w.dims()[1], blocks = (K + p.block_size - 1) / p.block_size;
    if (p.scale.size() != static_cast<size_t>(blocks * N) || p.zero_point.size() != p.scale.size())
      throw ModelError("shape [" + std::to_string(K) + ", " + std::to_string(N) + "] needs " + std::to_string(blocks * N) +
                       " block scales, the point has " + std::to_string(p.scale.size()));
    if (symmetric(p))
      for (int32_t z : p.zero_point)
        if (z != 0) throw ModelError("a symmetric (" + ir::dtype_name(p.dtype) + ") block has zero point " + std::to_string(z));
    if (nbits) write_nbits(*v, p, f, code_reader(p, w, f), K, N, blocks);
    else write_qdq(*v, p, codes_of(p, w, f), K, N, blocks);
  }

 private:
  void write_qdq(ir::Value& v, const QPoint& p, const std::vector<int32_t>& codes, int64_t K, int64_t N, int64_t blocks) {
    const std::vector<ir::Use> uses = v.uses;
    const ir::Node* before = first_consumer(g_, v);
    const std::string name = v.name;
    g_.rename_value(v, g_.unique_name(name + "_float"));
    ir::Value& qv = g_.add_initializer(g_.unique_name(name + "_quantized"), bytes_tensor(p.dtype, {K, N}, pack_codes(codes, p.dtype)));
    ir::Value& sv = g_.add_initializer(g_.unique_name(name + "_scale"), ir::Tensor::from_vector<float>({blocks, N}, p.scale));
    std::vector<ir::Value*> inputs{&qv, &sv};
    if (!symmetric(p))
      inputs.push_back(&g_.add_initializer(g_.unique_name(name + "_zero_point"),
                                           bytes_tensor(p.dtype, {blocks, N}, pack_codes(p.zero_point, p.dtype))));
    ir::Node& dq = g_.add_node("DequantizeLinear", "", unique_node_name(g_, names_, name + "_DequantizeLinear"), inputs, {name}, before);
    dq.set_attr(ir::Attribute{"axis", ir::AttrKind::Int, int64_t{0}, "", "", ""});
    dq.set_attr(ir::Attribute{"block_size", ir::AttrKind::Int, p.block_size, "", "", ""});
    ir::Value& out = *dq.outputs[0];
    out.dtype = ir::DType::F32;
    out.shape = ir::Shape::of({K, N});
    for (const ir::Use& u : uses) u.user->owner->set_input(*u.user, static_cast<size_t>(u.input_index), &out);
    drop_if_unused(&v);
  }

  void write_nbits(ir::Value& v, const QPoint& p, const BlockFormat& f, const std::function<int32_t(int64_t, int64_t)>& code,
                   int64_t K, int64_t N, int64_t blocks) {
    std::vector<ir::Node*> readers;
    for (const ir::Use& u : v.uses) {
      if (u.user->owner != &g_ || !u.user->is("MatMul") || u.input_index != 1)
        throw ModelError("MatMulNBits needs every reader to be a MatMul reading it as input B; '" + node_label(*u.user) +
                         "' reads it as input " + std::to_string(u.input_index));
      readers.push_back(u.user);
    }
    if (readers.empty()) throw ModelError("nothing reads it");
    const int64_t blob = p.block_size * f.bits / 8;
    const int32_t offset = symmetric(p) ? (1 << (f.bits - 1)) : 0;
    // B [N, blocks, blob]: column n's codes along K, unsigned, the last block padded with zeros.
    std::vector<int32_t> col(static_cast<size_t>(blocks * p.block_size));
    ir::Tensor packed = ir::Tensor::allocate(ir::DType::U8, {N, blocks, blob});
    const size_t col_bytes = static_cast<size_t>(blocks * blob);
    for (int64_t n = 0; n < N; ++n) {
      std::fill(col.begin(), col.end(), 0);
      for (int64_t k = 0; k < K; ++k) col[static_cast<size_t>(k)] = code(k, n) + offset;
      const std::string bytes = pack_codes(col, f.bits == 4 ? ir::DType::U4 : ir::DType::U8);
      if (bytes.size() != col_bytes) throw InternalError("MatMulNBits: a column packs to an unexpected size");
      std::memcpy(packed.mutable_raw() + static_cast<size_t>(n) * col_bytes, bytes.data(), col_bytes);
    }
    std::vector<float> scales(static_cast<size_t>(N * blocks));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t b = 0; b < blocks; ++b) scales[static_cast<size_t>(n * blocks + b)] = p.scale[static_cast<size_t>(b * N + n)];
    const std::string name = v.name;
    ir::Value& bv = g_.add_initializer(g_.unique_name(name + "_quantized"), std::move(packed));
    ir::Value& sv = g_.add_initializer(g_.unique_name(name + "_scales"), ir::Tensor::from_vector<float>({N * blocks}, scales));
    ir::Value* zv = nullptr;
    if (!symmetric(p)) {
      std::string zp;
      const int64_t per_col = f.bits == 4 ? (blocks + 1) / 2 : blocks;
      std::vector<int32_t> zc(static_cast<size_t>(blocks));
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t b = 0; b < blocks; ++b) zc[static_cast<size_t>(b)] = p.zero_point[static_cast<size_t>(b * N + n)];
        zp += pack_codes(zc, f.bits == 4 ? ir::DType::U4 : ir::DType::U8);
      }
      zv = &g_.add_initializer(g_.unique_name(name + "_zero_points"), bytes_tensor(ir::DType::U8, {N * per_col}, zp));
    }
    for (ir::Node* mm : readers) {
      ir::Value& y = *mm->outputs.at(0);
      std::vector<ir::Value*> inputs{mm->input(0), &bv, &sv};
      if (zv) inputs.push_back(zv);
      const std::string node_name = mm->name;
      ir::Node& nb = g_.add_node("MatMulNBits", "com.microsoft", g_.unique_name(y.name + "_nbits_tmp"), inputs,
                                 {g_.unique_name(y.name + "_nbits")}, mm);
      nb.since_version = 1;
      nb.set_attr(ir::Attribute{"K", ir::AttrKind::Int, K, "", "", ""});
      nb.set_attr(ir::Attribute{"N", ir::AttrKind::Int, N, "", "", ""});
      nb.set_attr(ir::Attribute{"bits", ir::AttrKind::Int, int64_t{f.bits}, "", "", ""});
      nb.set_attr(ir::Attribute{"block_size", ir::AttrKind::Int, p.block_size, "", "", ""});
      ir::Value& out = *nb.outputs[0];
      out.dtype = ir::DType::F32;
      out.shape = y.shape;
      take_over_output(g_, *mm, y, out);  // the MatMul is gone; its output name moves to out
      nb.name = node_name.empty() ? unique_node_name(g_, names_, y.name + "_MatMulNBits") : node_name;
      names_.insert(nb.name);
    }
    drop_if_unused(&v);
    bool has_import = false;
    for (const auto& imp : m_.opset_imports) has_import = has_import || imp.domain == "com.microsoft";
    if (!has_import) m_.opset_imports.push_back({"com.microsoft", 1});
  }

  ir::Model& m_;
  ir::Graph& g_;
  std::set<std::string>& names_;
};

}  // namespace

std::set<std::string> write_blocked_points(ir::Model& model, const Plan& plan, std::set<std::string>& node_names) {
  BlockedWriter writer(model, node_names);
  std::set<std::string> written;
  for (const QPoint& p : plan.points) {
    if (p.block_size <= 0) continue;
    try {
      if (p.role != Role::Weight) throw ModelError("only weights are quantized block-wise");
      writer.write(p, plan.matmul_nbits);
    } catch (ModelError& e) {
      e.add_context("weight '" + p.tensor + "'");
      throw;
    }
    written.insert(p.tensor);
  }
  return written;
}

}  // namespace mcc::transforms::quantize
