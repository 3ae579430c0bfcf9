// PrecheckedPlacement over a real PlacementManager and Inventory, with a scripted check
// runner standing in for pingmesh: what is answered, what stays reserved, which nodes a
// failed check leaves out.
#include "controller/placement/prechecked_placement.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/fake_clock.h"
#include "controller/inventory/controller_metrics.h"
#include "controller/inventory/inventory.h"
#include "controller/placement/placement_metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace weft::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class PrecheckedPlacementTest : public ::testing::Test {
 protected:
  PrecheckedPlacementTest()
      : controller_metrics_(registry_),
        inventory_(&clock_, InventoryOptions{}, &controller_metrics_),
        placement_metrics_(registry_),
        placement_(&inventory_, &clock_, PlacementOptions{}, &placement_metrics_),
        prechecked_(&placement_, [this](const weft::v1::CheckRequest& request,
                                        PrecheckedPlacement::CheckDone done) {
          checked_nodes_.assign(request.nodes().begin(), request.nodes().end());
          if (!refuse_.ok()) return refuse_;
          pending_ = std::move(done);
          return absl::OkStatus();
        }) {
    for (const std::string name : {"a1", "a2", "a3", "a4"}) {
      weft::v1::NodeInfo info;
      info.set_name(name);
      info.set_rack("a");
      weft::v1::Nic* nic = info.add_nics();
      nic->set_device("mlx5_0");
      nic->set_port(1);
      for (int g = 0; g < 8; ++g) info.add_gpus()->set_index(g);
      EXPECT_TRUE(inventory_.Register(info, 0).ok());
    }
  }

  static weft::v1::PlacementRequest Request(const std::string& job, int precheck_s) {
    weft::v1::PlacementRequest request;
    request.set_job_id(job);
    request.set_node_count(2);
    request.set_precheck_seconds(precheck_s);
    return request;
  }

  // Places `request`; the answer, once `done` ran.
  void Place(const weft::v1::PlacementRequest& request) {
    answer_.reset();
    prechecked_.Place(request, [this](absl::StatusOr<weft::v1::PlacementResponse> placed) {
      ASSERT_FALSE(answer_.has_value()) << "done called twice";
      answer_ = std::move(placed);
    });
  }

  // Ends the pending check: every checked node passes except those in `failing`.
  void EndCheck(const std::vector<std::string>& failing) {
    weft::v1::CheckResponse response;
    for (const std::string& node : checked_nodes_) {
      weft::v1::NodeCheck* check = response.add_nodes();
      check->set_node(node);
      const bool fails = std::find(failing.begin(), failing.end(), node) != failing.end();
      check->set_passed(!fails);
      if (fails) check->set_reason("nic " + node + "/mlx5_0 unreachable");
    }
    response.set_passed(failing.empty());
    ASSERT_TRUE(pending_);
    std::exchange(pending_, nullptr)(std::move(response));
  }

  std::vector<std::string> Reserved() {
    std::vector<std::string> jobs;
    const weft::v1::ListReservationsResponse live = placement_.ListReservations();
    for (const auto& r : live.reservations()) {
      for (const std::string& node : r.ring_order()) jobs.push_back(r.job_id() + "@" + node);
    }
    return jobs;
  }

  FakeClock clock_;
  prometheus::Registry registry_;
  ControllerMetrics controller_metrics_;
  Inventory inventory_;
  PlacementMetrics placement_metrics_;
  PlacementManager placement_;
  PrecheckedPlacement prechecked_;
  absl::Status refuse_;
  std::vector<std::string> checked_nodes_;
  PrecheckedPlacement::CheckDone pending_;
  std::optional<absl::StatusOr<weft::v1::PlacementResponse>> answer_;
};

TEST_F(PrecheckedPlacementTest, WithoutPrecheckItAnswersAtOnceUnchecked) {
  Place(Request("job", 0));
  ASSERT_TRUE(answer_.has_value());
  ASSERT_TRUE(answer_->ok()) << answer_->status();
  EXPECT_FALSE((*answer_)->has_precheck());
  EXPECT_TRUE(checked_nodes_.empty());
}

TEST_F(PrecheckedPlacementTest, APassingCheckAnswersThePlacementWithTheCheck) {
  Place(Request("job", 5));
  EXPECT_FALSE(answer_.has_value()) << "answered before the check ended";
  ASSERT_EQ(checked_nodes_.size(), 2u);
  EndCheck({});
  ASSERT_TRUE(answer_.has_value() && answer_->ok());
  EXPECT_TRUE((*answer_)->precheck().passed());
  EXPECT_THAT(std::vector<std::string>((*answer_)->ring_order().begin(),
                                       (*answer_)->ring_order().end()),
              ::testing::UnorderedElementsAreArray(checked_nodes_));
}

TEST_F(PrecheckedPlacementTest, AFailedNodeIsLeftOutAndTheFirstReservationReleased) {
  Place(Request("job", 5));
  const std::string bad = checked_nodes_[0];
  const std::string good = checked_nodes_[1];
  EndCheck({bad});
  ASSERT_TRUE(answer_.has_value() && answer_->ok()) << answer_->status();
  const weft::v1::PlacementResponse& placed = **answer_;
  EXPECT_FALSE(placed.precheck().passed());
  EXPECT_THAT(std::vector<std::string>(placed.ring_order().begin(), placed.ring_order().end()),
              Not(::testing::Contains(bad)));
  // One reservation, the second one: the first is gone.
  const std::vector<std::string> reserved = Reserved();
  EXPECT_EQ(reserved.size(), 2u);
  EXPECT_THAT(reserved, Not(::testing::Contains("job@" + bad)));
}

TEST_F(PrecheckedPlacementTest, WhenTheRestCannotHoldTheJobTheErrorNamesWhoWasLeftOut) {
  weft::v1::PlacementRequest request = Request("big", 5);
  request.set_node_count(4);
  Place(request);
  EndCheck({"a2"});
  ASSERT_TRUE(answer_.has_value());
  ASSERT_FALSE(answer_->ok());
  EXPECT_THAT(answer_->status().message(), HasSubstr("after the pre-job check left out a2"));
  EXPECT_TRUE(Reserved().empty()) << "nothing stays reserved";
}

TEST_F(PrecheckedPlacementTest, ACheckThatCannotRunReleasesTheReservation) {
  refuse_ = absl::FailedPreconditionError("node a1 is already in a running check");
  Place(Request("job", 5));
  ASSERT_TRUE(answer_.has_value());
  EXPECT_EQ(answer_->status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Reserved().empty());

  refuse_ = absl::OkStatus();
  Place(Request("job", 5));
  std::exchange(pending_, nullptr)(absl::UnavailableError("controller shutting down"));
  ASSERT_TRUE(answer_.has_value());
  EXPECT_EQ(answer_->status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(Reserved().empty());
}

TEST_F(PrecheckedPlacementTest, AJobAskingAgainGetsItsReservationBackWithoutACheck) {
  Place(Request("job", 5));
  EndCheck({});
  ASSERT_TRUE(answer_->ok());
  const std::string id = (*answer_)->reservation_id();
  checked_nodes_.clear();
  Place(Request("job", 5));
  ASSERT_TRUE(answer_.has_value()) << "answered at once";
  ASSERT_TRUE(answer_->ok());
  EXPECT_EQ((*answer_)->reservation_id(), id);
  EXPECT_TRUE(checked_nodes_.empty());
}

TEST_F(PrecheckedPlacementTest, AskingAgainWhileTheCheckRunsIsRefusedNotAnsweredUnchecked) {
  Place(Request("job", 5));
  ASSERT_FALSE(answer_.has_value());
  PrecheckedPlacement::CheckDone first_check = std::exchange(pending_, nullptr);
  std::optional<absl::StatusOr<weft::v1::PlacementResponse>> second;
  prechecked_.Place(Request("job", 5), [&](absl::StatusOr<weft::v1::PlacementResponse> placed) {
    second = std::move(placed);
  });
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second->status().message(), HasSubstr("ask again"));
  EXPECT_FALSE(pending_) << "no second check";
  // The first call's check ends: it answers, and the job may ask again.
  weft::v1::CheckResponse passed;
  passed.set_passed(true);
  first_check(passed);
  ASSERT_TRUE(answer_.has_value() && answer_->ok());
  Place(Request("job", 5));
  ASSERT_TRUE(answer_.has_value() && answer_->ok()) << "its reservation, at once";
}

TEST_F(PrecheckedPlacementTest, WithoutACheckRunnerAPrecheckIsRefusedAndNothingKept) {
  PrecheckedPlacement unable(&placement_, nullptr);
  std::optional<absl::Status> status;
  unable.Place(Request("job", 5), [&](absl::StatusOr<weft::v1::PlacementResponse> placed) {
    status = placed.status();
  });
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status->message(), HasSubstr("pre-job check"));
  EXPECT_TRUE(Reserved().empty());
}

}  // namespace
}  // namespace weft::controller
