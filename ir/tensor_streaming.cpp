// consume_in_chunks: chunked reading that releases memory behind it (see ir/tensor_streaming.h).
#include "ir/tensor_streaming.h"

#include <algorithm>
#include <memory>

#include "ir/errors.h"

namespace mcc::ir {

int64_t stream_chunk_elements(size_t element_size) {
  constexpr size_t kChunkBytes = size_t{16} << 20;
  return static_cast<int64_t>(std::max<size_t>(1, kChunkBytes / std::max<size_t>(element_size, 1)));
}

void consume_in_chunks(Tensor&& t, const std::function<void(const std::byte* data, int64_t begin, int64_t end)>& visit) {
  Tensor held = std::move(t);
  t = Tensor();
  if (held.dtype() == DType::String) throw InternalError("consume_in_chunks: string tensors have no fixed-size bytes");
  const size_t es = dtype_size(held.dtype());
  const int64_t n = held.numel();
  if (n == 0) return;
  const std::shared_ptr<Buffer> buf = held.buffer();
  const std::byte* data = held.raw();
  // Two references now: `held` and `buf`. More means another tensor shares the bytes.
  const bool sole = buf.use_count() == 2;
  const size_t base = static_cast<size_t>(data - buf->data());  // a tensor may view part of a buffer
  const int64_t step = stream_chunk_elements(es);
  for (int64_t b = 0; b < n; b += step) {
    const int64_t e = std::min(n, b + step);
    visit(data, b, e);
    if (sole) buf->discard_pages(base + static_cast<size_t>(b) * es, static_cast<size_t>(e - b) * es);
  }
}

}  // namespace mcc::ir
