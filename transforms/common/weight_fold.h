// Per-output-channel affine folding into the weights and bias of Conv, ConvTranspose, Gemm and
// MatMul, shared by fold_batch_norm and fold_mul_add: y = op(x) * k[c] + d[c] becomes
// op'(x) with W'[.., c, ..] = W * k[c] and bias' = bias * k[c] + d[c]. Computed in f64, stored
// in the weight's dtype.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace mcc::transforms {

/// The op's number of output channels, from its weight (input 1) as ir::weight_layout reads it
/// (Conv/ConvTranspose rank >= 3, Gemm/MatMul rank 2); nullopt when the weight is not understood
/// or a ConvTranspose's group does not divide its input channels.
std::optional<int64_t> output_channels(const ir::Node& op, const ir::Tensor& w);
/// Channel axis of the op's output tensor (1 for all four; the rank check is the caller's).
constexpr int kOutputChannelAxis = 1;

/// W * k[c] along the output channels, computed in f64, stored in W's dtype.
ir::Tensor scale_output_channels(const ir::Node& op, const ir::Tensor& w, const std::vector<double>& k);

/// The op's effective per-channel bias (Conv/ConvTranspose B; Gemm beta*C with C scalar, [N] or
/// [1, N]); zeros when absent. nullopt when the bias is not constant or not per-channel.
std::optional<std::vector<double>> effective_bias(const ir::Node& op, int64_t channels);
/// True for float dtypes the folds compute with.
bool is_float(ir::DType dt);

std::vector<double> to_f64(const ir::Tensor& t);
ir::Tensor from_f64(ir::DType dt, std::vector<int64_t> dims, const std::vector<double>& v);

/// Applies W' = W*k[c] and bias' = bias*k[c] + d[c] to a Conv/ConvTranspose/Gemm in place: new
/// initializers named after the old ones, old ones dropped when nothing else uses them. For Gemm
/// the stored C is bias'/beta (beta set to 1 when it was 0). Preconditions as checked by
/// output_channels and effective_bias.
void fold_affine_into(ir::Graph& g, ir::Node& op, const std::vector<double>& k, const std::vector<double>& d);

}  // namespace mcc::transforms
