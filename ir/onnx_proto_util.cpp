// Helpers shared by ONNX import and export: unknown-field metadata, tensor TypeProto encoding,
// deterministic serialization and field splitting for streamed writes.
#include "ir/onnx_proto_util.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/unknown_field_set.h>

#include <vector>

namespace mcc::ir::onnx_util {

namespace pb = google::protobuf;

MetadataProps take_unknown_metadata(pb::Message& msg, int number) {
  MetadataProps out;
  pb::UnknownFieldSet* ufs = msg.GetReflection()->MutableUnknownFields(&msg);
  if (ufs->empty()) return out;
  for (int i = 0; i < ufs->field_count();) {
    const pb::UnknownField& f = ufs->field(i);
    onnx::StringStringEntryProto e;
    // Only plain key/value entries are lifted; anything richer stays as bytes (lossless).
    if (f.number() == number && f.type() == pb::UnknownField::TYPE_LENGTH_DELIMITED &&
        e.ParseFromString(f.length_delimited()) && e.unknown_fields().empty() && e.has_key() &&
        e.has_value()) {
      out.emplace_back(e.key(), e.value());
      ufs->DeleteSubrange(i, 1);
    } else {
      ++i;
    }
  }
  return out;
}

void put_unknown_metadata(pb::Message& msg, int number, const MetadataProps& props) {
  if (props.empty()) return;
  pb::UnknownFieldSet* ufs = msg.GetReflection()->MutableUnknownFields(&msg);
  for (const auto& [k, v] : props) {
    onnx::StringStringEntryProto e;
    e.set_key(k);
    e.set_value(v);
    ufs->AddLengthDelimited(number, serialize(e));
  }
}

void encode_tensor_type(DType dt, const Shape& shape, onnx::TypeProto& out) {
  auto* tt = out.mutable_tensor_type();
  if (dt != DType::Undefined) tt->set_elem_type(static_cast<int32_t>(dt));
  if (!shape.dims) return;
  auto* sp = tt->mutable_shape();
  for (const Dim& d : *shape.dims) {
    auto* pd = sp->add_dim();
    if (d.value) pd->set_dim_value(*d.value);
    else if (!d.param.empty()) pd->set_dim_param(d.param);
    if (!d.denotation.empty()) pd->set_denotation(d.denotation);
  }
}

bool decode_tensor_type(const onnx::TypeProto& tp, DType& dt, Shape& shape) {
  if (!tp.has_tensor_type()) return false;
  const auto& tt = tp.tensor_type();
  dt = static_cast<DType>(tt.elem_type());
  shape = Shape::unknown();
  if (tt.has_shape()) {
    shape.dims.emplace();
    for (const auto& pd : tt.shape().dim()) {
      Dim d;
      if (pd.has_dim_value()) d.value = pd.dim_value();
      else if (pd.has_dim_param()) d.param = pd.dim_param();
      d.denotation = pd.denotation();
      shape.dims->push_back(std::move(d));
    }
  }
  return true;
}

std::string declaration_fingerprint(const Value& v) {
  std::string out;
  auto put = [&](const std::string& s) { out += std::to_string(s.size()) + ':' + s; };
  out += v.has_type ? 'T' : '-';
  out += std::to_string(static_cast<int>(v.dtype)) + ';';
  if (v.shape.dims) {
    out += 'S' + std::to_string(v.shape.dims->size()) + ';';
    for (const Dim& d : *v.shape.dims) {
      out += d.value ? std::to_string(*d.value) + ';' : std::string("?;");
      put(d.param);
      put(d.denotation);
    }
  }
  put(v.type_passthrough.bytes);
  put(v.doc_string);
  out += 'M' + std::to_string(v.metadata_props.size()) + ';';
  for (const auto& [k, val] : v.metadata_props) { put(k); put(val); }
  put(v.proto_passthrough);
  return out;
}

std::string serialize(const pb::Message& msg) {
  std::string s;
  s.reserve(msg.ByteSizeLong());
  {
    pb::io::StringOutputStream so(&s);
    pb::io::CodedOutputStream cos(&so);
    cos.SetSerializationDeterministic(true);
    msg.SerializePartialToCodedStream(&cos);
  }
  return s;
}

std::unique_ptr<pb::Message> split_fields_after(pb::Message& msg, int after) {
  std::unique_ptr<pb::Message> rest(msg.New());
  const pb::Reflection* r = msg.GetReflection();
  std::vector<const pb::FieldDescriptor*> set, move;
  r->ListFields(msg, &set);
  for (const auto* f : set)
    if (f->number() > after) move.push_back(f);
  if (!move.empty()) r->SwapFields(&msg, rest.get(), move);
  r->MutableUnknownFields(&msg)->Swap(r->MutableUnknownFields(rest.get()));
  return rest;
}

}  // namespace mcc::ir::onnx_util
