// libFuzzer entry: build with clang++ -fsanitize=fuzzer,address and
// -DMEMKV_FUZZ_TARGET=FuzzFrame (or any other target of fuzz_targets.h); see
// docs/organization.md ("Tests"). Every target is linked in, so the sources are
// the same for each: src/verbs/{verbs_common,detect}.cc, src/drive/format.cc
// and src/http/{http_message,http_response,http_router}.cc besides the proto,
// config and base sources (not libibverbs, liburing nor libssl);
// -fno-sanitize-recover makes an UndefinedBehaviorSanitizer report a crash
// libFuzzer keeps, e.g.:
//
//   M=src; clang++-14 -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
//     -DMEMKV_FUZZ_TARGET=FuzzHttpRequest -Isrc -Iinclude -I. fuzz/libfuzzer_main.cc fuzz/fuzz_targets.cc \
//     $M/proto/frame.cc $M/proto/messages.cc $M/verbs/verbs_common.cc $M/verbs/detect.cc $M/drive/format.cc \
//     $M/base/{bytes,checksum,checksum_avx2,hmac,log,status,units}.cc $M/http/{http_message,http_response,http_router}.cc \
//     $M/config/{server_config,client_config,diagnostics,host_port,server_rules,yaml_fields}.cc \
//     -mavx2 -lyaml-cpp -lcrypto -lxxhash -o http_fuzz && ./http_fuzz -max_total_time=60 -timeout=3 fuzz/corpus/http_request
//
// Target -> corpus: FuzzFrame frame, FuzzConfig server_config, FuzzRdmaOffer
// rdma_offer, FuzzRdmaAnswer rdma_answer, FuzzRdmaPutRequest rdma_put_request,
// FuzzRdmaGrant rdma_grant, FuzzToken token, FuzzDcbReply dcb_reply,
// FuzzDriveFormat drive_format, FuzzHttpResponse http_response, FuzzHttpRequest
// http_request.
#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  memkv::fuzz::MEMKV_FUZZ_TARGET(data, size);
  return 0;
}
