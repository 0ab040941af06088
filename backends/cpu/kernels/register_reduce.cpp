// register_reduce(): reductions (reduce.cpp), the softmax family (softmax.cpp), ArgMax/ArgMin/TopK
// (arg_topk.cpp), CumSum/CumProd (cumsum.cpp), Resize/Upsample (resize.cpp).
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/reduce_util.h"

namespace mcc::backends::cpu {

void register_reduce(KernelRegistry& r) {
  register_reductions(r);
  register_softmax(r);
  register_arg_topk(r);
  register_cumsum(r);
  register_resize(r);
}
}  // namespace mcc::backends::cpu
