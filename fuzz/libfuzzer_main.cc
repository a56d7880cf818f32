// libFuzzer entry: build with clang++ -fsanitize=fuzzer,address and
// -DMEMKV_FUZZ_TARGET=FuzzFrame (or FuzzConfig); see docs/testing.md.
#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  memkv::fuzz::MEMKV_FUZZ_TARGET(data, size);
  return 0;
}
