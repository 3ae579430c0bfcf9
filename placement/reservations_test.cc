#include "placement/reservations.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/fake_clock.h"
#include "gtest/gtest.h"
#include "placement/test_clusters.h"
#include "placement/topology.h"

namespace weft::placement {
namespace {

using weft::v1::PlacementRequest;
using weft::v1::PlacementResponse;

class ReservationBookTest : public ::testing::Test {
 protected:
  ReservationBookTest()
      : topology_(*Topology::Build(MakeCluster({{"a", "p1", 4}, {"b", "p1", 4}}))),
        book_(&clock_) {}

  PlacementResponse MustPlace(const PlacementRequest& request) {
    absl::StatusOr<PlacementResponse> placed = book_.Place(topology_, {}, request);
    EXPECT_TRUE(placed.ok()) << placed.status();
    return placed.ok() ? *placed : PlacementResponse();
  }

  FakeClock clock_;
  Topology topology_;
  ReservationBook book_;
};

TEST_F(ReservationBookTest, ReservesWithIdAndExpiry) {
  PlacementRequest request = RingJob("j1", 4);
  request.set_lease_ttl_s(60);
  const PlacementResponse r = MustPlace(request);
  EXPECT_EQ(r.reservation_id(), "rsv-1");
  EXPECT_EQ(r.expires_at_unix_s(), absl::ToUnixSeconds(clock_.Now()) + 60);
  ASSERT_EQ(book_.List().size(), 1u);
  EXPECT_EQ(book_.List()[0].reservation_id(), "rsv-1");
  EXPECT_EQ(book_.Reserved().entries_size(), 4);
  EXPECT_EQ(book_.Reserved().entries(0).job_id(), "j1");
}

TEST_F(ReservationBookTest, SameJobAgainGetsTheSameReservation) {
  const PlacementResponse first = MustPlace(RingJob("j1", 4));
  clock_.Advance(absl::Seconds(10));
  PlacementRequest again = RingJob("j1", 4);
  again.set_lease_ttl_s(600);  // a different lease alone does not make it a new request
  const PlacementResponse second = MustPlace(again);
  EXPECT_EQ(second.reservation_id(), first.reservation_id());
  EXPECT_EQ(second.expires_at_unix_s(), first.expires_at_unix_s());
  EXPECT_EQ(std::vector<std::string>(second.ring_order().begin(), second.ring_order().end()),
            std::vector<std::string>(first.ring_order().begin(), first.ring_order().end()));
  EXPECT_EQ(book_.List().size(), 1u);

  absl::StatusOr<PlacementResponse> changed = book_.Place(topology_, {}, RingJob("j1", 5));
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(changed.status().message(),
            "job 'j1' already holds reservation rsv-1 (4 nodes) for a different request; "
            "release it first");
}

TEST_F(ReservationBookTest, ReservedNodesAreNotPlacedTwice) {
  const PlacementResponse a = MustPlace(RingJob("j1", 4));
  const PlacementResponse b = MustPlace(RingJob("j2", 4));
  EXPECT_NE(a.racks(0), b.racks(0));
  absl::StatusOr<PlacementResponse> c = book_.Place(topology_, {}, RingJob("j3", 1));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(c.status().message(),
            "job 'j3' needs 1 node with 8 GPUs; 0 are free and eligible; not eligible: 8 in "
            "use");
}

TEST_F(ReservationBookTest, CallerOccupancyCountsToo) {
  absl::StatusOr<PlacementResponse> r =
      book_.Place(topology_, OccupancyOf({"a-01", "a-02", "a-03", "a-04"}), RingJob("j", 4));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->racks(0), "b");
}

TEST_F(ReservationBookTest, ExpiredLeasesFreeTheirNodes) {
  PlacementRequest request = RingJob("j1", 8);
  request.set_lease_ttl_s(30);
  const PlacementResponse first = MustPlace(request);
  clock_.Advance(absl::Seconds(29));
  EXPECT_EQ(book_.List().size(), 1u);
  EXPECT_FALSE(book_.Place(topology_, {}, RingJob("j2", 1)).ok());
  clock_.Advance(absl::Seconds(1));  // now == expires_at: expired
  EXPECT_TRUE(book_.List().empty());
  EXPECT_EQ(book_.Reserved().entries_size(), 0);
  EXPECT_TRUE(book_.Place(topology_, {}, RingJob("j2", 1)).ok());
  // The expired job placed again gets a new reservation.
  EXPECT_EQ(MustPlace(RingJob("j1", 4)).reservation_id(), "rsv-3");
  const absl::Status release = book_.Release(first.reservation_id());
  EXPECT_EQ(release.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(release.message(),
            "no live reservation 'rsv-1'; it may have expired or been released");
}

TEST_F(ReservationBookTest, RenewExtendsTheLease) {
  PlacementRequest request = RingJob("j1", 8);
  request.set_lease_ttl_s(30);
  const PlacementResponse r = MustPlace(request);
  clock_.Advance(absl::Seconds(20));
  absl::StatusOr<PlacementResponse> renewed = book_.Renew(r.reservation_id(), 60);
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_EQ(renewed->expires_at_unix_s(), absl::ToUnixSeconds(clock_.Now()) + 60);
  clock_.Advance(absl::Seconds(59));
  ASSERT_EQ(book_.List().size(), 1u);
  EXPECT_EQ(book_.List()[0].expires_at_unix_s(), renewed->expires_at_unix_s());
  clock_.Advance(absl::Seconds(1));
  EXPECT_TRUE(book_.List().empty());
  EXPECT_EQ(book_.Renew(r.reservation_id(), 60).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ReservationBookTest, DefaultAndMaximumLease) {
  const PlacementResponse r = MustPlace(RingJob("j1", 1));  // lease_ttl_s 0: default 5 min
  EXPECT_EQ(r.expires_at_unix_s(), absl::ToUnixSeconds(clock_.Now() + absl::Minutes(5)));
  absl::StatusOr<PlacementResponse> renewed = book_.Renew(r.reservation_id(), 100000);
  ASSERT_FALSE(renewed.ok());
  EXPECT_EQ(renewed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(renewed.status().message(),
            "lease_ttl_s 100000 is too long; accepted: 1 to 86400 (0: the default, 300)");
  PlacementRequest long_lease = RingJob("j2", 1);
  long_lease.set_lease_ttl_s(100000);
  EXPECT_EQ(book_.Place(topology_, {}, long_lease).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ReservationBookTest, ReleaseFreesNodesAndTheJobId) {
  const PlacementResponse r = MustPlace(RingJob("j1", 8));
  ASSERT_TRUE(book_.Release(r.reservation_id()).ok());
  EXPECT_TRUE(book_.List().empty());
  const PlacementResponse again = MustPlace(RingJob("j1", 8));
  EXPECT_EQ(again.reservation_id(), "rsv-2");
  EXPECT_EQ(book_.Release("rsv-1").code(), absl::StatusCode::kNotFound);
}

TEST_F(ReservationBookTest, ListIsOldestFirst) {
  MustPlace(RingJob("j1", 1));
  MustPlace(RingJob("j2", 1));
  MustPlace(RingJob("j3", 1));
  ASSERT_TRUE(book_.Release("rsv-2").ok());
  const std::vector<PlacementResponse> list = book_.List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].job_id(), "j1");
  EXPECT_EQ(list[1].job_id(), "j3");
}

TEST_F(ReservationBookTest, EngineRefusalsPassThroughAndReserveNothing) {
  PlacementRequest bad = RingJob("j1", 1);
  bad.set_qos_class("gold");
  EXPECT_EQ(book_.Place(topology_, {}, bad).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(book_.List().empty());
  EXPECT_EQ(MustPlace(RingJob("j1", 1)).reservation_id(), "rsv-1");
}

}  // namespace
}  // namespace weft::placement
