// Giving freed heap memory back to the operating system between the phases of a stage.
// glibc's malloc keeps freed blocks below its (self-raising) mmap threshold in its heaps, so a
// process that built and dropped large temporaries (calibration statistics, one pass's Hessians)
// keeps their pages resident and the next phase's peak RSS includes them. Does nothing where
// malloc is not glibc's.
#pragma once

namespace mcc::ir {

/// Returns the free pages of every malloc arena to the system (glibc malloc_trim(0)); a few
/// milliseconds on a heap of a few GB. Call where large buffers have just been freed.
void release_free_memory();

}  // namespace mcc::ir
