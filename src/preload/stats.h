// The shim's counters (memkv_preload.h gives programs a copy of them): what
// it put and fetched, and the puts that failed, above all those no call
// could report. One set per process, updated with relaxed atomics from any
// thread; never reset (a child after fork() goes on from its parent's).
#ifndef MEMKV_PRELOAD_STATS_H_
#define MEMKV_PRELOAD_STATS_H_

#include <cstdint>
#include <string>

namespace memkv::preload {

// A put of `bytes` that ended with errno `err` (0: it succeeded).
void CountPut(uint64_t bytes, int err);
// A fetch of `bytes` that ended with errno `err` (0: it succeeded; ENOENT,
// a miss, counts as neither bytes nor an error).
void CountGet(uint64_t bytes, int err);
// A failed put (already counted by CountPut) that no call returns: at exit,
// or of a descriptor replaced by dup2. Returns the count after this one.
uint64_t CountUnreported();
uint64_t UnreportedPutErrors();

// The keys whose last put failed and that were neither put nor deleted
// since: data a program meant to store that MemKV does not hold.
void NoteStored(const std::string& key);  // a put succeeded, or a delete
void NoteLost(const std::string& key);    // a put failed
uint64_t LostKeys();

// "puts N (B bytes), put errors E (U unreported), gets N (B bytes), get
// errors E, keys lost K": the line MEMKV_PRELOAD_STATS asks for at exit.
std::string StatsLine();

}  // namespace memkv::preload

#endif  // MEMKV_PRELOAD_STATS_H_
