#include "store/etcd/etcd_watch.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace weft::store::etcd {

EtcdWatch::EtcdWatch(EtcdClient* client, const Clock* clock, WatchOptions options,
                     EventsCallback on_events, EndCallback on_end)
    : client_(client),
      clock_(clock),
      options_(std::move(options)),
      on_events_(std::move(on_events)),
      on_end_(std::move(on_end)),
      next_revision_(options_.start_revision) {
  thread_ = std::thread([this] { Run(); });
}

EtcdWatch::~EtcdWatch() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    if (active_ != nullptr) active_->TryCancel();
  }
  thread_.join();
}

int64_t EtcdWatch::next_revision() const {
  absl::MutexLock lock(&mu_);
  return next_revision_;
}

int EtcdWatch::streams_opened() const {
  absl::MutexLock lock(&mu_);
  return streams_opened_;
}

void EtcdWatch::Run() {
  size_t index = client_->preferred();
  while (true) {
    absl::Status ended = RunStream(index);
    absl::MutexLock lock(&mu_);
    if (stop_) return;
    if (absl::IsOutOfRange(ended) || absl::IsCancelled(ended)) {
      mu_.Unlock();
      on_end_(ended);
      mu_.Lock();
      return;
    }
    WEFT_LOG(WARNING) << "etcd watch stream ended member="
                      << client_->member(index).endpoint << " resume_from=" << next_revision_
                      << " error=\"" << ended.message() << "\"";
    index = (index + 1) % client_->member_count();
    clock_->AwaitWithDeadline(&mu_, absl::Condition(&stop_),
                              clock_->Now() + options_.retry_delay);
    if (stop_) return;
  }
}

absl::Status EtcdWatch::RunStream(size_t index) {
  EtcdClient::Member& member = client_->member(index);
  grpc::ClientContext context;
  RequireLeader(&context);
  etcdserverpb::WatchRequest create;
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return absl::CancelledError("watch stopped");
    active_ = &context;
    ++streams_opened_;
    create.mutable_create_request()->set_start_revision(next_revision_);
  }
  create.mutable_create_request()->set_key(options_.key);
  create.mutable_create_request()->set_range_end(options_.range_end);
  auto stream = member.watch->Watch(&context);
  absl::Status why;
  etcdserverpb::WatchResponse response;
  if (!stream->Write(create)) {
    why = absl::UnavailableError("could not send the watch request");
  } else {
    while (stream->Read(&response)) {
      if (response.compact_revision() != 0) {
        why = absl::OutOfRangeError(absl::StrCat(
            "etcd watch of ", options_.key, " from revision ", next_revision(),
            ": etcd has compacted up to revision ", response.compact_revision(),
            "; reload and watch again"));
        break;
      }
      if (response.canceled()) {
        why = absl::CancelledError(absl::StrCat("etcd cancelled the watch of ", options_.key,
                                                ": ", response.cancel_reason()));
        break;
      }
      {
        absl::MutexLock lock(&mu_);
        // A watch from "now" resumes after the revision it was created at.
        if (response.created() && next_revision_ == 0) {
          next_revision_ = response.header().revision() + 1;
        }
      }
      if (response.events_size() == 0) continue;
      client_->Served(index);
      std::vector<mvccpb::Event> events(response.events().begin(), response.events().end());
      on_events_(events);
      absl::MutexLock lock(&mu_);
      next_revision_ = events.back().kv().mod_revision() + 1;
    }
  }
  {
    absl::MutexLock lock(&mu_);
    active_ = nullptr;
  }
  context.TryCancel();
  grpc::Status finished = stream->Finish();
  if (!why.ok()) return why;
  return absl::UnavailableError(absl::StrCat(member.endpoint, ": ",
                                             finished.ok() ? "stream closed" : finished.error_message()));
}

}  // namespace weft::store::etcd
