# MCC_FUZZ=ON: compile every mcc library with AddressSanitizer, UndefinedBehaviorSanitizer (every
# report fatal) and libFuzzer's coverage instrumentation, for the targets in fuzz/. Included by
# the top-level CMakeLists.txt before any library is defined; does nothing when MCC_FUZZ is OFF.
# Meant for its own build folder (scripts/fuzz.sh uses build-fuzz), never for the main build.
if(MCC_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "MCC_FUZZ=ON needs clang with libFuzzer (Debian: clang, libclang-rt-dev); "
                        "configure with -DCMAKE_CXX_COMPILER=clang++ (scripts/fuzz.sh does)")
  endif()
  set(MCC_FUZZ_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=all)
  add_compile_options(${MCC_FUZZ_SANITIZERS} -fsanitize=fuzzer-no-link -fno-omit-frame-pointer -g)
  add_link_options(${MCC_FUZZ_SANITIZERS})
endif()
