// Template part of fuzz_support.h (run_one), kept apart so the header reads as an interface.
#pragma once
#include <exception>
#include <typeinfo>

#include "ir/errors.h"

namespace mcc::fuzz {

template <class F>
int run_one(F&& f, ErrorText text) {
  try {
    f();
  } catch (const mcc::Error& e) {
    if (text == ErrorText::OneLine) check_error_text(e.what());
  } catch (const std::exception& e) {
    finding(std::string("a std:: exception escaped (") + typeid(e).name() + "): " + e.what());
  }
  return 0;
}

}  // namespace mcc::fuzz
