// libFuzzer entry: one executable per target of fuzz_targets.h, each built
// with -DMEMKV_FUZZ_TARGET=<target> by fuzz/CMakeLists.txt when CMake is run
// with clang and -DMEMKV_FUZZ=ON (docs/organization.md, "Tests"):
//
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
//     -DMEMKV_FUZZ=ON -DMEMKV_SANITIZE=address,undefined
//   cmake --build build-fuzz --target memkv-fuzz-http_request
//   build-fuzz/fuzz/memkv-fuzz-http_request /tmp/new fuzz/corpus/http_request -max_total_time=60
//
// Target -> corpus (and executable memkv-fuzz-<corpus>): FuzzFrame frame,
// FuzzConfig server_config, FuzzRdmaOffer rdma_offer, FuzzRdmaAnswer
// rdma_answer, FuzzRdmaPutRequest rdma_put_request, FuzzRdmaGrant rdma_grant,
// FuzzToken token, FuzzDcbReply dcb_reply, FuzzDriveFormat drive_format,
// FuzzHttpResponse http_response, FuzzHttpRequest http_request.
#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  memkv::fuzz::MEMKV_FUZZ_TARGET(data, size);
  return 0;
}
