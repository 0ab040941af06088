// Concat -> QuantizeLinear fusion (see concat_quantize_fusion.h): matching at plan time, then one
// pass that quantizes every input slab into its place in the output, split across threads by
// elements.
#include "backends/cpu/kernels/concat_quantize_fusion.h"

#include <algorithm>

#include "backends/cpu/kernels/int8_gemm.h"
#include "backends/cpu/kernels/tensor_ops_util.h"
#include "backends/fusion_match.h"
#include "ir/errors.h"

namespace mcc::backends::cpu {

std::optional<FusedKernel> fuse_concat_quantize(const ir::Node& n) {
  if (!n.is("Concat") || !n.domain.empty() || !one_output(n) || n.inputs.empty()) return std::nullopt;
  if (!n.has_attr("axis") && n.since_version >= 4) return std::nullopt;  // the Concat kernel reports it
  for (const ir::Value* v : n.inputs)
    if (!known_f32(v)) return std::nullopt;
  const ir::Node* q = only_reader(n.outputs[0]);
  if (!q || !q->is("QuantizeLinear") || !q->domain.empty() || !one_output(*q) || q->inputs.size() < 2 ||
      q->inputs[0] != n.outputs[0] || q->attr_int("block_size", 0) != 0 || q->attr_int("output_dtype", 0) != 0 ||
      q->attr_int("saturate", 1) != 1)
    return std::nullopt;
  const ir::Tensor* s = constant_of(q->inputs[1], ir::DType::F32);
  if (!s || s->numel() != 1) return std::nullopt;
  const float scale = s->data<float>()[0];
  float zp = 0.f;
  ir::DType out_dt = ir::DType::U8;
  if (q->inputs.size() > 2 && q->inputs[2]) {
    const ir::Tensor* z = constant_of(q->inputs[2], ir::DType::U8);
    if (!z) z = constant_of(q->inputs[2], ir::DType::I8);
    if (!z || z->numel() != 1) return std::nullopt;
    out_dt = z->dtype();
    zp = out_dt == ir::DType::U8 ? static_cast<float>(z->data<uint8_t>()[0]) : static_cast<float>(z->data<int8_t>()[0]);
  }
  const int64_t axis_attr = n.attr_int("axis", 1);
  FusedKernel fk;
  fk.absorbed = {q};
  fk.output = q->outputs[0];
  fk.kernel = [axis_attr, scale, zp, out_dt](KernelContext& ctx) {
    const tensor_ops::ConcatLayout L = tensor_ops::concat_layout(ctx, axis_attr);
    if (ctx.in(0).dtype() != ir::DType::F32)
      throw ModelError(ctx.node().describe() + ": Concat input 0 is " + ir::dtype_name(ctx.in(0).dtype()) +
                       ", expected f32");
    ir::Tensor& y = ctx.alloc_output_overwritten(0, out_dt, L.out);
    if (y.numel() == 0) return;
    // Slab (o, i) of the output: input i's row o, at o * row + (sum of len before i).
    const size_t k = ctx.num_inputs();
    std::vector<int64_t> start(k + 1, 0);
    for (size_t i = 0; i < k; ++i) start[i + 1] = start[i] + L.len[i];
    std::byte* yp = y.mutable_raw();
    ctx.parallel_for(L.outer * L.row, 4, [&](int64_t b, int64_t e) {
      for (int64_t o = b / L.row; o * L.row < e; ++o)
        for (size_t i = 0; i < k; ++i) {
          const int64_t lo = std::max(b, o * L.row + start[i]), hi = std::min(e, o * L.row + start[i + 1]);
          if (lo >= hi) continue;
          const float* x = ctx.in(i).data<float>().data() + o * L.len[i] + (lo - o * L.row - start[i]);
          if (out_dt == ir::DType::U8) quantize_row_u8(x, hi - lo, scale, zp, reinterpret_cast<uint8_t*>(yp) + lo);
          else quantize_row_s8(x, hi - lo, scale, zp, reinterpret_cast<int8_t*>(yp) + lo);
        }
    });
  };
  return fk;
}

}  // namespace mcc::backends::cpu
