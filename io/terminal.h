// Everything mcc prints to the terminal passes printable() (ir/text_escape.h): bytes that are not
// UTF-8 and control characters from model names or file contents come out as `\xNN`, never raw.
// Applies to std::cout, std::cerr, the log (which writes to std::cerr) and print_out. Does not
// apply to files mcc writes (models keep their bytes; JSON goes through io/json_text.h).
#pragma once

namespace mcc::io {

/// Puts the filter in front of std::cout and std::cerr for the rest of the process.
void install_printable_output();

/// printf-style output to std::cout (so it is filtered and stays in order with std::cout).
void print_out(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace mcc::io
