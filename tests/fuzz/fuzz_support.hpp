#pragma once
// Shared by the libFuzzer harnesses: what counts as a clean refusal. ConfigError (and the
// nccl-tests log's NcclLogError, which the commands turn into one) is how bad input must end;
// any other exception escapes the harness and libFuzzer reports it as a crash, as it does every
// sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectives/nccl_tests_log.hpp"
#include "core/error.hpp"

#define DDPSIM_FUZZ_TARGET(...)                                                \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {    \
    const std::string text(reinterpret_cast<const char*>(data), size);         \
    try {                                                                      \
      __VA_ARGS__                                                              \
    } catch (const ddpsim::core::ConfigError& e) {                             \
      if (e.problems().empty()) __builtin_trap(); /* a refusal must say why */ \
    } catch (const ddpsim::collectives::NcclLogError&) {                       \
    }                                                                          \
    return 0;                                                                  \
  }
