// Parking a JSON document in an anonymous scratch file (see parked_json.h).
#include "transforms/pipeline/parked_json.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mcc::transforms {

std::shared_ptr<const ParkedJson> ParkedJson::park(nlohmann::ordered_json& doc) {
  std::unique_ptr<ir::SpillFile> file = ir::SpillFile::create();
  if (!file) return nullptr;
  std::vector<uint8_t> cbor;
  nlohmann::ordered_json::to_cbor(doc, cbor);
  uint64_t offset = 0;
  if (!file->append(cbor.data(), cbor.size(), offset)) return nullptr;
  doc = nlohmann::ordered_json();
  return std::shared_ptr<const ParkedJson>(new ParkedJson(std::move(file)));
}

nlohmann::ordered_json ParkedJson::load() const {
  std::vector<uint8_t> cbor(static_cast<size_t>(file_->size()));
  file_->read(0, cbor.data(), cbor.size());
  return nlohmann::ordered_json::from_cbor(cbor);
}

size_t json_heap_bytes(const nlohmann::ordered_json& doc) {
  // Every value is a 16-byte node; strings, arrays and objects add a heap block of their own
  // (with malloc's overhead), objects a key string per member.
  constexpr size_t kNode = 16, kBlock = 32;
  if (doc.is_string()) return kNode + kBlock + doc.get_ref<const std::string&>().size();
  if (!doc.is_structured()) return kNode;
  size_t n = kNode + kBlock;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (doc.is_object()) n += kBlock + it.key().size();
    n += json_heap_bytes(*it);
  }
  return n;
}

}  // namespace mcc::transforms
