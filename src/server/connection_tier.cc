// Connection, part three: requests that need the drives. Each hands its work
// to the tier's I/O threads and parks the connection; the closure returned by
// the work's `finish` queues the response on the worker (OnDriveDone).
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "server/connection.h"

namespace memkv {

void DriveMailbox::Post(uint64_t connection_id, DriveDone done) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return;  // the worker is gone (and its eventfd with it); `done` is dropped
  done_.emplace_back(connection_id, std::move(done));
  uint64_t one = 1;
  ssize_t ignored = ::write(wake_fd_, &one, sizeof(one));
  (void)ignored;
}

std::vector<std::pair<uint64_t, DriveDone>> DriveMailbox::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(done_, {});
}

void DriveMailbox::Close() {
  std::vector<std::pair<uint64_t, DriveDone>> dropped;
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  dropped.swap(done_);
}

void Connection::RunOnDrive(size_t parts, std::function<void(size_t)> part, std::function<DriveDone()> finish) {
  drive_wait_ = true;
  auto left = std::make_shared<std::atomic<size_t>>(parts);
  auto last = [left, finish = std::move(finish), mailbox = ctx_.mailbox, id = id_] {
    if (left->fetch_sub(1, std::memory_order_acq_rel) == 1) mailbox->Post(id, finish());
  };
  for (size_t i = 0; i < parts; ++i) {
    ctx_.tier->Submit([part, last, i] {
      part(i);
      last();
    });
  }
}

void Connection::WriteThroughAndRespond(std::vector<PayloadSink::Item> items, bool batch) {
  auto work = std::make_shared<std::vector<PayloadSink::Item>>(std::move(items));
  std::vector<size_t> ready;
  for (size_t i = 0; i < work->size(); ++i) {
    if ((*work)[i].status.ok()) ready.push_back(i);
  }
  if (ready.empty()) {
    RespondPuts(*work, batch);
    return;
  }
  Tier* tier = ctx_.tier;
  RunOnDrive(
      ready.size(),
      [tier, work, ready](size_t j) {
        PayloadSink::Item& item = (*work)[ready[j]];
        item.status = tier->WriteThrough(std::move(item.put), item.key, item.checksum);
      },
      [work, batch]() -> DriveDone { return [work, batch](Connection& c) { c.RespondPuts(*work, batch); }; });
}

void Connection::RdmaCommitThrough(PendingPut put, std::string key, uint64_t checksum) {
  struct Commit {
    PendingPut put;
    std::string key;
    uint64_t checksum = 0;
    uint64_t size = 0;
    Status status;
  };
  auto commit = std::make_shared<Commit>();
  commit->size = put.size();
  commit->put = std::move(put);
  commit->key = std::move(key);
  commit->checksum = checksum;
  Tier* tier = ctx_.tier;
  RunOnDrive(
      1, [tier, commit](size_t) { commit->status = tier->WriteThrough(std::move(commit->put), commit->key, commit->checksum); },
      [commit]() -> DriveDone {
        return [commit](Connection& c) {
          if (commit->status.ok()) {
            c.ctx_.metrics->rdma_put_bytes.Add(commit->size);
            c.ctx_.metrics->op(c.cur_.opcode).value_bytes.Add(commit->size);
          }
          c.RespondError(commit->status);
        };
      });
}

namespace {

// One value fetched from the drives, by an I/O thread, for the worker.
struct Fetch {
  std::string key;
  Result<FetchedValue> value = NotFound("");
};

std::shared_ptr<Fetch> NewFetch(std::string key) {
  auto f = std::make_shared<Fetch>();
  f->key = std::move(key);
  return f;
}

}  // namespace

void Connection::FetchAndRespondGet(std::string key) {
  auto fetch = NewFetch(std::move(key));
  Tier* tier = ctx_.tier;
  RunOnDrive(
      1, [tier, fetch](size_t) { fetch->value = tier->Fetch(fetch->key, /*need_dram=*/false); },
      [fetch]() -> DriveDone {
        return [fetch](Connection& c) {
          if (fetch->value.ok()) {
            c.RespondValue(std::move(fetch->value).value());
          } else if (fetch->value.status().code() == StatusCode::kNotFound) {
            c.Respond(StatusCode::kNotFound, "");
          } else {
            c.RespondError(fetch->value.status());
          }
        };
      });
}

void Connection::FetchAndGrant(std::string key) {
  auto fetch = NewFetch(std::move(key));
  Tier* tier = ctx_.tier;
  RunOnDrive(
      1, [tier, fetch](size_t) { fetch->value = tier->Fetch(fetch->key, /*need_dram=*/true); },
      [fetch]() -> DriveDone {
        return [fetch](Connection& c) {
          if (fetch->value.ok()) {
            c.GrantPin(std::move(fetch->value->handle));
          } else if (fetch->value.status().code() == StatusCode::kNotFound) {
            c.Respond(StatusCode::kNotFound, "");
          } else {
            c.RespondError(fetch->value.status());
          }
        };
      });
}

void Connection::DeleteThrough(std::string key) {
  struct Removal {
    std::string key;
    Status status;
  };
  auto removal = std::make_shared<Removal>();
  removal->key = std::move(key);
  Tier* tier = ctx_.tier;
  RunOnDrive(
      1, [tier, removal](size_t) { removal->status = tier->Delete(removal->key); },
      [removal]() -> DriveDone {
        return [removal](Connection& c) {
          if (removal->status.code() == StatusCode::kNotFound) {
            c.Respond(StatusCode::kNotFound, "");
          } else {
            c.RespondError(removal->status);
          }
        };
      });
}

}  // namespace memkv
