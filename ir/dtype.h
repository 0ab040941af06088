// DType: ONNX TensorProto numbering (import/export is a cast; unknown codes survive), one traits
// table, and dispatch<>(): the only dtype switch in the codebase.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "ir/errors.h"
#include "ir/float16.h"

namespace mcc::ir {

enum class DType : int32_t {
  Undefined = 0, F32 = 1, U8 = 2, I8 = 3, U16 = 4, I16 = 5, I32 = 6, I64 = 7, String = 8,
  Bool = 9, F16 = 10, F64 = 11, U32 = 12, U64 = 13, C64 = 14, C128 = 15, BF16 = 16,
  F8E4M3FN = 17, F8E4M3FNUZ = 18, F8E5M2 = 19, F8E5M2FNUZ = 20, U4 = 21, I4 = 22, F4E2M1 = 23,
  F8E8M0 = 24, U2 = 25, I2 = 26,
};

struct DTypeInfo {
  std::string_view name;  // "f32", "i64", ...; unknown codes print as "dtype<N>"
  int bits;               // storage bits per element (0 for string/undefined)
  bool is_float, is_int, is_signed;
  bool computable;        // mcc's CPU backend computes with it
};

/// Traits of a dtype. Unknown codes return a generic entry (bits 0, not computable).
const DTypeInfo& info(DType);
/// Name for messages: "f32", or "dtype<42>" for codes mcc does not know.
std::string dtype_name(DType);
/// Bytes per element for fixed-size dtypes (sub-byte types: 1; on disk 4-bit types pack two per
/// byte and 2-bit types four per byte, lowest bits first).
size_t dtype_size(DType);
/// Parses "f32"/"float32"/"float" etc.; throws UsageError.
DType parse_dtype(std::string_view);

/// Maps a DType to its C++ storage type.
template <DType D> struct CType;
template <> struct CType<DType::F32> { using type = float; };
template <> struct CType<DType::F64> { using type = double; };
template <> struct CType<DType::F16> { using type = mcc::f16; };
template <> struct CType<DType::BF16> { using type = mcc::bf16; };
template <> struct CType<DType::I8> { using type = int8_t; };
template <> struct CType<DType::U8> { using type = uint8_t; };
template <> struct CType<DType::I16> { using type = int16_t; };
template <> struct CType<DType::U16> { using type = uint16_t; };
template <> struct CType<DType::I32> { using type = int32_t; };
template <> struct CType<DType::U32> { using type = uint32_t; };
template <> struct CType<DType::I64> { using type = int64_t; };
template <> struct CType<DType::U64> { using type = uint64_t; };
template <> struct CType<DType::Bool> { using type = bool; };  // 1 byte, 0 or 1

/// Maps a C++ type back to its DType.
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::F32; }
template <> constexpr DType dtype_of<double>() { return DType::F64; }
template <> constexpr DType dtype_of<mcc::f16>() { return DType::F16; }
template <> constexpr DType dtype_of<mcc::bf16>() { return DType::BF16; }
template <> constexpr DType dtype_of<int8_t>() { return DType::I8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::U8; }
template <> constexpr DType dtype_of<int16_t>() { return DType::I16; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::U16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::I32; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::U32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::I64; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::U64; }
template <> constexpr DType dtype_of<bool>() { return DType::Bool; }

template <class T> struct TypeTag { using type = T; };

std::string join_dtype_names(std::initializer_list<DType>);

/// Calls f(TypeTag<CType<dt>>{}) for the listed dtypes; anything else throws UnsupportedError
/// naming `what`, the dtype and the supported list.
template <DType... Ds, class F>
void dispatch(DType dt, std::string_view what, F&& f) {
  const bool hit = ((dt == Ds ? (f(TypeTag<typename CType<Ds>::type>{}), true) : false) || ...);
  if (!hit)
    throw UnsupportedError(std::string(what) + ": dtype " + dtype_name(dt) +
                           " not supported; supported: " + join_dtype_names({Ds...}));
}

/// Common dtype groups for dispatch, as macros over the parameter pack (one place to extend).
#define MCC_FLOAT_DTYPES ::mcc::ir::DType::F32, ::mcc::ir::DType::F64, ::mcc::ir::DType::F16, ::mcc::ir::DType::BF16
#define MCC_INT_DTYPES                                                                   \
  ::mcc::ir::DType::I8, ::mcc::ir::DType::U8, ::mcc::ir::DType::I16, ::mcc::ir::DType::U16, \
      ::mcc::ir::DType::I32, ::mcc::ir::DType::U32, ::mcc::ir::DType::I64, ::mcc::ir::DType::U64
#define MCC_NUMERIC_DTYPES MCC_FLOAT_DTYPES, MCC_INT_DTYPES
#define MCC_ALL_DTYPES MCC_NUMERIC_DTYPES, ::mcc::ir::DType::Bool

}  // namespace mcc::ir
