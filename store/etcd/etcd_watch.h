// EtcdWatch: a watch on a key or prefix that survives member failures. It streams
// etcd's Watch from a revision and, when the stream ends (member killed, no leader,
// network), opens it again on the next member from the revision after the last
// event delivered, so no event is lost or delivered twice. A follower replica keeps
// its warm copy with it: load at revision R, then watch from R + 1.
//
// Events arrive in revision order on the watch's own thread, in batches (one per
// etcd response). When etcd has compacted past the revision to resume from, the watch
// ends with OUT_OF_RANGE naming both revisions: the caller must reload and watch anew.
//
// Thread-safe; the callbacks run on the watch's thread and must not destroy the watch.
#ifndef WEFT_STORE_ETCD_ETCD_WATCH_H_
#define WEFT_STORE_ETCD_ETCD_WATCH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "proto/etcd/kv.pb.h"
#include "store/etcd/etcd_client.h"

namespace weft::store::etcd {

struct WatchOptions {
  std::string key;
  // "" watches `key` alone; PrefixEnd(key) every key under it.
  std::string range_end;
  // The first revision wanted; 0 = from now.
  int64_t start_revision = 0;
  // Wait between a stream's end and the next attempt (real time, on the Clock).
  absl::Duration retry_delay = absl::Milliseconds(250);
};

class EtcdWatch {
 public:
  using EventsCallback = std::function<void(const std::vector<mvccpb::Event>& events)>;
  // Called once when the watch ends for good (compacted, or cancelled by etcd).
  using EndCallback = std::function<void(const absl::Status& status)>;

  // Starts watching. `client` and `clock` outlive the watch.
  EtcdWatch(EtcdClient* client, const Clock* clock, WatchOptions options,
            EventsCallback on_events, EndCallback on_end);
  // Stops the stream and joins its thread.
  ~EtcdWatch();
  EtcdWatch(const EtcdWatch&) = delete;
  EtcdWatch& operator=(const EtcdWatch&) = delete;

  // The revision the watch resumes from after a reconnect.
  int64_t next_revision() const;
  // How many times a stream was opened (1 without failures).
  int streams_opened() const;

 private:
  void Run();
  // One stream on member `index` until it ends; returns why.
  absl::Status RunStream(size_t index);

  EtcdClient* const client_;
  const Clock* const clock_;
  const WatchOptions options_;
  const EventsCallback on_events_;
  const EndCallback on_end_;

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* active_ ABSL_GUARDED_BY(mu_) = nullptr;
  int64_t next_revision_ ABSL_GUARDED_BY(mu_);
  int streams_opened_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace weft::store::etcd

#endif  // WEFT_STORE_ETCD_ETCD_WATCH_H_
