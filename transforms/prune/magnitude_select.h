// Magnitude ranking for unstructured pruning without copying the weights.
//
// The k weights to prune are the k smallest under the order (|w|, tensor position, element
// index). Instead of materialising magnitudes and sorting them (several times a layer's size in
// memory), a radix select reads the tensors a few times with 16-bit digit histograms to find the
// threshold key T and how many of the elements equal to T (in position order) complete the k;
// marking then takes every element below T and those first ties. The selected set is exactly the
// one a full sort by that order gives.
// Keys: the bit pattern of |w| as float32 for f32/f16/bf16 (exact and monotone for non-negative
// values), as float64 for f64 and for every tensor when f64 ones are ranked with others. NaN
// ranks above every number.
// Does not apply to integer or string tensors (prunable weights are float initializers).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/tensor.h"

namespace mcc::transforms::prune {

/// Sets mask[i] for the k smallest elements of `t` (1 <= k <= numel); mask has numel entries.
void mark_smallest(const ir::Tensor& t, int64_t k, std::vector<bool>& mask);

/// The same over several tensors ranked together: masks[j] belongs to tensors[j].
void mark_smallest_global(const std::vector<const ir::Tensor*>& tensors, int64_t k,
                          const std::vector<std::vector<bool>*>& masks);

/// Number of elements of a float tensor equal to zero (either sign).
int64_t count_zeros(const ir::Tensor& t);

}  // namespace mcc::transforms::prune
