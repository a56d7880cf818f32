// Fuzz targets for every parser that reads untrusted input. Each is a plain
// function so that it runs under libFuzzer (fuzz/libfuzzer_main.cc, built
// with clang -fsanitize=fuzzer) and, with its corpus plus generated inputs,
// as an ordinary unit test (fuzz/fuzz_corpus_test.cc) in every build.
#ifndef MEMKV_FUZZ_FUZZ_TARGETS_H_
#define MEMKV_FUZZ_FUZZ_TARGETS_H_

#include <cstddef>
#include <cstdint>

namespace memkv::fuzz {

// Frame fields, then every meta decoder over the rest of the input.
void FuzzFrame(const uint8_t* data, size_t size);
// Server YAML and client YAML parsing and validation.
void FuzzConfig(const uint8_t* data, size_t size);

}  // namespace memkv::fuzz

#endif  // MEMKV_FUZZ_FUZZ_TARGETS_H_
