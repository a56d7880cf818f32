#include "drive/fault_engine.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace memkv::drive {
namespace {
constexpr uint32_t kTearGranularity = 4096;
}  // namespace

FaultInjectingEngine::FaultInjectingEngine(std::unique_ptr<IoEngine> inner, uint64_t seed)
    : inner_(std::move(inner)), name_("faulty(" + std::string(inner_->name()) + ")"), rng_(seed) {}

FaultInjectingEngine::~FaultInjectingEngine() = default;

uint64_t& FaultInjectingEngine::Count(uint32_t drive, IoKind kind) { return counts_[{drive, int(kind)}]; }

void FaultInjectingEngine::FailNth(uint32_t drive, IoKind kind, uint64_t n, int err, bool sticky) {
  MutexLock lock(mu_);
  fail_rules_.push_back({drive, kind, Count(drive, kind) + n, err, sticky});
}

void FaultInjectingEngine::LimitWrites(uint32_t drive, uint64_t limit_bytes) {
  MutexLock lock(mu_);
  write_limits_[drive] = limit_bytes;
}

void FaultInjectingEngine::TearNthWrite(uint32_t drive, uint64_t n, uint32_t keep_bytes) {
  MutexLock lock(mu_);
  tear_rules_.push_back({drive, Count(drive, IoKind::kWrite) + n, keep_bytes});
}

void FaultInjectingEngine::EnableVolatileCache(bool pass_syncs) {
  MutexLock lock(mu_);
  volatile_cache_ = true;
  pass_syncs_ = pass_syncs;
}

void FaultInjectingEngine::PowerCutAt(uint64_t n) {
  MutexLock lock(mu_);
  cut_at_ = writes_and_syncs_ + n;
}

void FaultInjectingEngine::ClearFaults() {
  MutexLock lock(mu_);
  fail_rules_.clear();
  tear_rules_.clear();
  write_limits_.clear();
  cut_at_ = 0;
  powered_off_ = false;
}

bool FaultInjectingEngine::powered_off() const {
  MutexLock lock(mu_);
  return powered_off_;
}

uint64_t FaultInjectingEngine::writes_and_syncs() const {
  MutexLock lock(mu_);
  return writes_and_syncs_;
}

uint64_t FaultInjectingEngine::ops_seen(uint32_t drive, IoKind kind) const {
  MutexLock lock(mu_);
  auto it = counts_.find({drive, int(kind)});
  return it == counts_.end() ? 0 : it->second;
}

void FaultInjectingEngine::WriteThrough(uint32_t drive, uint64_t offset, const uint8_t* bytes, uint32_t length) {
  if (length == 0) return;
  IoOp op{.kind = IoKind::kWrite, .drive = drive, .offset = offset, .buf = const_cast<uint8_t*>(bytes),
          .length = length};
  inner_->Run(std::span<IoOp>(&op, 1));
}

uint32_t FaultInjectingEngine::RandomPrefix(uint32_t length) {
  uint32_t blocks = length / kTearGranularity;
  if (blocks == 0) return 0;
  return uint32_t(rng_() % blocks) * kTearGranularity;  // 0 .. length - granularity
}

void FaultInjectingEngine::WriteSomeBlocks(uint32_t drive, const CachedWrite& w) {
  // Neither a drive's cache nor the page cache destages a write's blocks in
  // order: any subset may be on the media at the cut.
  for (uint32_t at = 0; at < w.length; at += kTearGranularity) {
    if (rng_() % 2 == 0) WriteThrough(drive, w.offset + at, w.bytes.data() + at, std::min(kTearGranularity, w.length - at));
  }
}

void FaultInjectingEngine::CutPower(IoOp* hit) {
  // What the drive's cache had not made durable: each write independently
  // lost, kept or torn (the order a real cache destages in is unknown).
  for (auto& [drive, writes] : cached_) {
    for (CachedWrite& w : writes) {
      switch (rng_() % 3) {
        case 0: break;
        case 1: WriteThrough(drive, w.offset, w.bytes.data(), w.length); break;
        default: WriteSomeBlocks(drive, w); break;
      }
    }
  }
  cached_.clear();
  if (hit != nullptr && hit->kind == IoKind::kWrite) {
    WriteThrough(hit->drive, hit->offset, hit->buf, RandomPrefix(hit->length));
  }
  powered_off_ = true;
}

void FaultInjectingEngine::HoldSyncs(bool hold) {
  {
    MutexLock lock(hold_mu_);
    hold_syncs_ = hold;
  }
  hold_cv_.notify_all();
}

size_t FaultInjectingEngine::syncs_held() const {
  MutexLock lock(hold_mu_);
  return syncs_held_;
}

void FaultInjectingEngine::HoldNextWrite(uint32_t drive, uint64_t from_offset) {
  MutexLock lock(hold_mu_);
  write_hold_ = WriteHold{.armed = true, .released = false, .drive = drive, .from_offset = from_offset};
}

void FaultInjectingEngine::ReleaseWrite() {
  {
    MutexLock lock(hold_mu_);
    write_hold_.armed = false;
    write_hold_.released = true;
  }
  hold_cv_.notify_all();
}

size_t FaultInjectingEngine::writes_held() const {
  MutexLock lock(hold_mu_);
  return write_hold_.held;
}

void FaultInjectingEngine::Run(std::span<IoOp> ops) {
  {
    MutexLock hold(hold_mu_);
    const uint32_t drive = write_hold_.drive;
    const uint64_t from = write_hold_.from_offset;
    if (write_hold_.armed && std::any_of(ops.begin(), ops.end(), [&](const IoOp& op) {
          return op.kind == IoKind::kWrite && op.drive == drive && op.offset >= from;
        })) {
      write_hold_.armed = false;
      ++write_hold_.held;
      hold.Wait(hold_cv_, [&]() MEMKV_REQUIRES(hold_mu_) { return write_hold_.released; });
      --write_hold_.held;
    }
  }
  if (std::any_of(ops.begin(), ops.end(), [](const IoOp& op) { return op.kind == IoKind::kSync; })) {
    MutexLock hold(hold_mu_);
    ++syncs_held_;
    hold.Wait(hold_cv_, [&]() MEMKV_REQUIRES(hold_mu_) { return !hold_syncs_; });
    --syncs_held_;
  }
  MutexLock lock(mu_);
  std::vector<IoOp> pass;           // ops for the inner engine, in one batch
  std::vector<size_t> pass_index;   // their positions in `ops`
  for (size_t i = 0; i < ops.size(); ++i) {
    IoOp& op = ops[i];
    if (powered_off_) {
      op.result = -EIO;
      continue;
    }
    const uint64_t nth = ++Count(op.drive, op.kind);
    if (op.kind != IoKind::kRead && ++writes_and_syncs_ == cut_at_) {
      CutPower(&op);
      op.result = -EIO;
      continue;
    }
    bool failed = false;
    for (const FailRule& r : fail_rules_) {
      if (r.drive == op.drive && r.kind == op.kind && (nth == r.at || (r.sticky && nth > r.at))) {
        op.result = -r.err;
        failed = true;
        break;
      }
    }
    if (failed) continue;
    if (op.kind == IoKind::kWrite) {
      auto limit = write_limits_.find(op.drive);
      if (limit != write_limits_.end() && op.offset + op.length > limit->second) {
        op.result = -ENOSPC;
        continue;
      }
      auto tear = std::find_if(tear_rules_.begin(), tear_rules_.end(),
                               [&](const TearRule& r) { return r.drive == op.drive && r.at == nth; });
      if (tear != tear_rules_.end()) {
        uint32_t keep = std::min(op.length, tear->keep_bytes / kTearGranularity * kTearGranularity);
        WriteThrough(op.drive, op.offset, op.buf, keep);
        op.result = int32_t(op.length);  // the lie
        continue;
      }
      if (volatile_cache_) {
        auto copy = AlignedBuffer::Allocate(op.length);
        if (!copy.ok()) {
          op.result = -ENOMEM;
          continue;
        }
        std::memcpy(copy->data(), op.buf, op.length);
        cached_[op.drive].push_back({op.offset, std::move(copy).value(), op.length});
        op.result = int32_t(op.length);
        continue;
      }
    }
    if (op.kind == IoKind::kSync && volatile_cache_) {
      auto it = cached_.find(op.drive);
      if (it != cached_.end()) {
        std::vector<IoOp> flush;
        for (CachedWrite& w : it->second) {
          flush.push_back({.kind = IoKind::kWrite, .drive = op.drive, .offset = w.offset, .buf = w.bytes.data(),
                           .length = w.length});
        }
        inner_->Run(flush);
        cached_.erase(it);
        bool flushed = std::all_of(flush.begin(), flush.end(), [](const IoOp& f) { return f.ok(); });
        if (!flushed) {
          op.result = -EIO;
          continue;
        }
      }
      if (!pass_syncs_) {
        op.result = 0;
        continue;
      }
    }
    pass.push_back(op);
    pass_index.push_back(i);
  }
  if (!pass.empty()) inner_->Run(pass);
  for (size_t j = 0; j < pass.size(); ++j) {
    IoOp& op = ops[pass_index[j]];
    op.result = pass[j].result;
    if (op.kind != IoKind::kRead || !op.ok() || !volatile_cache_) continue;
    // A read sees the cached writes over what the file holds, oldest first.
    auto it = cached_.find(op.drive);
    if (it == cached_.end()) continue;
    for (const CachedWrite& w : it->second) {
      uint64_t lo = std::max(op.offset, w.offset);
      uint64_t hi = std::min(op.offset + op.length, w.offset + w.length);
      if (lo < hi) std::memcpy(op.buf + (lo - op.offset), w.bytes.data() + (lo - w.offset), hi - lo);
    }
  }
}

}  // namespace memkv::drive
