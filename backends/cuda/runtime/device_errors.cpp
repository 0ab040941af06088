// The device error word and the table of error sites (see device_errors.h).
#include "backends/cuda/runtime/device_errors.h"

#include <atomic>
#include <mutex>
#include <vector>

#include "backends/cuda/runtime/device_api.h"
#include "ir/errors.h"

namespace mcc::cuda {
namespace {

std::mutex g_mutex;
std::vector<std::string> g_sites;  // site id k is g_sites[k - 1]
int32_t* g_word = nullptr;
std::atomic<bool> g_armed{false};

}  // namespace

int32_t register_error_site(std::string message) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_sites.push_back(std::move(message));
  return static_cast<int32_t>(g_sites.size());
}

int32_t* device_error_word() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_word) {
    g_word = static_cast<int32_t*>(device_malloc(sizeof(int32_t)));
    fill_zero(g_word, sizeof(int32_t));
    g_armed = true;
  }
  return g_word;
}

void check_device_errors() {
  if (!g_armed) return;
  int32_t site = 0;
  copy_to_host(&site, g_word, sizeof site);
  if (site == 0) return;
  fill_zero(g_word, sizeof(int32_t));
  std::string message;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    message = site > 0 && static_cast<size_t>(site) <= g_sites.size() ? g_sites[static_cast<size_t>(site) - 1]
                                                                       : "a cuda kernel reported an unknown error";
  }
  throw ModelError(message);
}

}  // namespace mcc::cuda
