// The deployment targets' table (see quantize/target.h).
#include "transforms/quantize/target.h"

#include "ir/errors.h"
#include "transforms/pipeline/pass_registry.h"

namespace mcc::transforms::quantize {

namespace {

const std::vector<Target>& targets() {
  static const std::vector<Target> t{
      {.name = "ort",
       .op_types = {"Add", "AveragePool", "Concat", "Conv", "ConvTranspose", "Flatten", "Gemm", "GlobalAveragePool",
                    "HardSigmoid", "HardSwish", "LeakyRelu", "MatMul", "MaxPool", "Mul", "Reshape", "Resize", "Sigmoid",
                    "Squeeze", "Transpose", "Unsqueeze"},
       .need_quantized_output = {"Add", "AveragePool", "Concat", "Flatten", "GlobalAveragePool", "HardSigmoid",
                                 "HardSwish", "LeakyRelu", "MaxPool", "Mul", "Reshape", "Resize", "Sigmoid", "Squeeze",
                                 "Transpose", "Unsqueeze"},
       .same_scale_output = {"Concat", "Flatten", "MaxPool", "Reshape", "Resize", "Squeeze", "Transpose", "Unsqueeze"},
       .float_scalar_steps = true,
       .float_image_stem = true,
       .per_channel_activations = false,
       .float_run_gap = 24,
       .float_weights_beside_float_input = true,
       .weight_format = "matmul_nbits"},
      {.name = "openvino",
       .op_types = {"Add", "AveragePool", "Concat", "Conv", "ConvTranspose", "Gemm", "GlobalAveragePool", "MatMul"},
       .need_quantized_output = {},
       .same_scale_output = {"Concat"},
       .float_inputs_from = {"Transpose"},
       .per_channel_activations = false,
       .activation = ir::DType::I8,
       .float_run_gap = 24,
       .weight_format = "qdq"},
      {.name = "generic",
       .op_types = {"Conv", "ConvTranspose", "Gemm", "MatMul"},
       .need_quantized_output = {},
       .same_scale_output = {},
       .per_channel_activations = true,
       .weight_format = "qdq"},
  };
  return t;
}

}  // namespace

const Target& find_target(const std::string& name) {
  for (const Target& t : targets())
    if (t.name == name) return t;
  throw UsageError("quantize: unknown target '" + name + "'" + did_you_mean(name, target_names()) +
                   "; targets: ort, openvino, generic");
}

std::vector<std::string> target_names() {
  std::vector<std::string> names;
  for (const Target& t : targets()) names.push_back(t.name);
  return names;
}

}  // namespace mcc::transforms::quantize
