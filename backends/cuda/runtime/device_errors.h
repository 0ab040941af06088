// Errors device kernels find while they run (an index out of range) reach the host through one
// int32 word in device memory: a kernel that finds one stores its site id there (any writer wins)
// and carries on with a clamped value; the backend reads the word whenever it waits for the
// device anyway (downloads, synchronize) and throws ModelError naming the node. The run's outputs
// are then not returned, as on the cpu, where the kernel itself refuses the input.
// Until a kernel asks for the word, checking costs nothing.
#pragma once
#include <cstdint>
#include <string>

namespace mcc::cuda {

/// A site id (> 0) for an error a kernel may report; `message` is the whole line to throw, e.g.
/// "node 'g' (Gather-13): an index is outside [-5, 5)".
int32_t register_error_site(std::string message);
/// The device word kernels store a site id into (allocated and zeroed on first use).
int32_t* device_error_word();
/// When a kernel has reported an error: clears the word and throws ModelError with its message.
/// Reads the word only once device_error_word() has been handed out.
void check_device_errors();

}  // namespace mcc::cuda
