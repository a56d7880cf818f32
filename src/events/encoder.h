// The msgpack payload of one published batch, in the layout of vLLM's
// KV-events publisher (docs/events.md, "Format"): the batch is an array
// [ts, [events...], data_parallel_rank]; each event is a tagged map
// ({"type": "BlockStored", ...}, what current vLLM sends) or a tagged
// positional array (["BlockStored", ...], what vLLM sent before).
// Pure functions; any thread.
#ifndef MEMKV_EVENTS_ENCODER_H_
#define MEMKV_EVENTS_ENCODER_H_

#include <span>
#include <string>
#include <string_view>

#include "events/event.h"
#include "memkv/status.h"

namespace memkv::events {

enum class Encoding : uint8_t { kMap, kArray };

// "map", "array".
std::string_view EncodingName(Encoding encoding);
// Parses "map" or "array"; InvalidArgument naming the text otherwise.
Result<Encoding> ParseEncoding(std::string_view text);

// `ts`: seconds since the epoch. data_parallel_rank is always 0: a server is
// one rank.
std::string EncodeBatch(double ts, std::span<const Event> events, Encoding encoding);

}  // namespace memkv::events

#endif  // MEMKV_EVENTS_ENCODER_H_
