// Helpers shared by ONNX import and export (and only by them): the protobuf field numbers newer
// ONNX releases added that the 1.12 proto does not know, metadata carried in unknown fields, tensor
// TypeProto encoding, and deterministic serialization.
#pragma once
#include <onnx/onnx_pb.h>

#include <string>

#include "ir/graph.h"

namespace mcc::ir::onnx_util {

// metadata_props fields added after ONNX 1.12 (StringStringEntryProto, repeated). The 1.12 proto
// parses them as unknown fields; import lifts them into the IR and export puts them back.
inline constexpr int kNodeMetadataField = 9;       // NodeProto.metadata_props
inline constexpr int kValueInfoMetadataField = 4;  // ValueInfoProto.metadata_props
inline constexpr int kGraphMetadataField = 16;     // GraphProto.metadata_props

/// Removes every well-formed length-delimited unknown field `number` from `msg`, decoded as
/// StringStringEntryProto; malformed ones stay where they are (carried through as bytes).
MetadataProps take_unknown_metadata(google::protobuf::Message& msg, int number);
/// Appends the entries as unknown fields `number` (what a newer ONNX writes as metadata_props).
void put_unknown_metadata(google::protobuf::Message& msg, int number, const MetadataProps& props);

/// Writes a tensor TypeProto for (dtype, shape): elem_type when known, shape when the rank is known.
void encode_tensor_type(DType dt, const Shape& shape, onnx::TypeProto& out);
/// Reads a tensor TypeProto's elem_type and shape; false when it is not a tensor type.
bool decode_tensor_type(const onnx::TypeProto& tp, DType& dt, Shape& shape);

/// The fields of v that make up its ValueInfoProto (type, doc string, metadata, passthrough), as
/// one string: equal strings mean export would write the same declaration.
std::string declaration_fingerprint(const Value& v);

/// Deterministic serialization (stable across runs; what save_model writes).
std::string serialize(const google::protobuf::Message& msg);

/// Moves every set field numbered above `after` (and all unknown fields) from `msg` into a fresh
/// message of the same type, so that msg | field `after` | result is the canonical field order.
std::unique_ptr<google::protobuf::Message> split_fields_after(google::protobuf::Message& msg, int after);

}  // namespace mcc::ir::onnx_util
