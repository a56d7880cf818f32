// Fuzz targets for every parser that reads untrusted input. Each is a plain
// function so that it runs under libFuzzer (fuzz/libfuzzer_main.cc, built
// with clang -fsanitize=fuzzer) and, with its corpus plus generated inputs,
// as an ordinary unit test (fuzz/fuzz_corpus_test.cc) in every build.
//
// Beyond not crashing, a target checks what must hold of whatever a decoder
// accepts (re-encoding reproduces the input, counts and lengths agree, values
// are in range) and aborts, naming the broken invariant, when it does not.
#ifndef MEMKV_FUZZ_FUZZ_TARGETS_H_
#define MEMKV_FUZZ_FUZZ_TARGETS_H_

#include <cstddef>
#include <cstdint>

namespace memkv::fuzz {

// Frame fields, then every meta decoder over the rest of the input.
void FuzzFrame(const uint8_t* data, size_t size);
// Server YAML and client YAML parsing and validation.
void FuzzConfig(const uint8_t* data, size_t size);

// ---- RDMA bootstrap and control ops (corpus/<name> per target) ----

// Connect request meta after the nonce: the client's RDMA offer (rdma_offer).
void FuzzRdmaOffer(const uint8_t* data, size_t size);
// A whole Connect response meta: the limits, then what follows them (`rest`)
// through the RDMA answer decoder (rdma_answer).
void FuzzRdmaAnswer(const uint8_t* data, size_t size);
// RdmaPut request meta (rdma_put_request).
void FuzzRdmaPutRequest(const uint8_t* data, size_t size);
// RdmaPut / RdmaGet response meta: a grant of remote segments (rdma_grant).
void FuzzRdmaGrant(const uint8_t* data, size_t size);
// RdmaCommit / RdmaRelease request meta: a token (token).
void FuzzToken(const uint8_t* data, size_t size);

// ---- verbs auto-detection ----

// One RTM_GETDCB / DCB_CMD_IEEE_GET netlink reply, then the traffic class /
// service level resolution over what it parsed to (dcb_reply).
void FuzzDcbReply(const uint8_t* data, size_t size);

// ---- drive tier ----

// The on-drive decoders of src/drive/format.h (drive_format). The first byte
// picks one, by its low two bits:
//   0  DecodeSuperblock over one 4096-byte block: the rest of the input,
//      zero-padded or truncated to 4096 bytes;
//   1  DecodeJournalAreaHeader over such a block;
//   2  DecodeRecord over the records of a journal area, back to back: an
//      8-byte little-endian link (the area's nonce), then the records;
//   3  ExtentsCoverValue, the rule a put record's extents must meet: a
//      value size (8 bytes), an extent size (4 bytes), then unit counts.
// With bit 2 (0x04) set, the target first writes the checksums (and, for
// records, the links) the way the encoders would, so that mutations get past
// the checksum to the checks behind it; without it, the bytes go to the
// decoders as they are.
void FuzzDriveFormat(const uint8_t* data, size_t size);

// ---- admin HTTP client ----

// An HTTP response as HttpGet reads it (src/http/http_client.h): the head up
// to its blank line through ParseResponseHead, the rest through the chunked
// decoder (http_response).
void FuzzHttpResponse(const uint8_t* data, size_t size);

// ---- admin HTTP server ----

// Bytes from a client as HttpConnection reads them (http_request): the head
// gathered under the 8 KiB limit whole, a byte at a time and in uneven reads
// (all must end it at the same place), then ParseRequestHead, a router with a
// handler of each kind (GET, POST, OPTIONS, a percent-encoded path, one that
// throws, one that answers something invalid) and SerializeResponse, read
// back through ParseResponseHead. What follows the first head (pipelined
// requests) is split into heads and parsed the same way.
void FuzzHttpRequest(const uint8_t* data, size_t size);

}  // namespace memkv::fuzz

#endif  // MEMKV_FUZZ_FUZZ_TARGETS_H_
