#include "cli/pingmesh_command.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(PingmeshCommandTest, StatusShowsThePlanVerdictsAndWhatIsNotProbed) {
  weft::v1::PingmeshStatus status;
  status.set_enabled(true);
  status.set_plan_version(3);
  status.set_probed_nodes(16);
  status.set_streams(288);
  status.set_probes_per_stream_per_s(97);
  status.set_crossing_probes_per_stream_per_s(40);
  status.set_window_ms(250);
  status.set_meets_detection_target(false);
  weft::v1::PingmeshVerdict* nic = status.add_verdicts();
  nic->set_kind("nic");
  nic->set_component("a3/mlx5_1");
  nic->set_problem("unreachable");
  nic->set_loss_rate(1);
  nic->set_confidence(0.99);
  nic->set_evidence("360 of 360 probes lost");
  weft::v1::PingmeshVerdict* host = status.add_verdicts();
  host->set_kind("host");
  host->set_component("b2");
  host->set_problem("slow");
  host->set_host_delay_us(2000);
  status.add_unprobed("a2: not reporting");
  const std::string text = FormatPingmeshStatus(status);
  EXPECT_THAT(text, HasSubstr("plan 3: 16 nodes probed, 288 streams at 97 probes/s each "
                              "inside a ToR and 40 through the spines"));
  EXPECT_THAT(text, HasSubstr("below the detection target"));
  EXPECT_THAT(text, HasSubstr("a3/mlx5_1"));
  EXPECT_THAT(text, HasSubstr("100%"));
  EXPECT_THAT(text, HasSubstr("+2000 us"));
  EXPECT_THAT(text, HasSubstr("360 of 360 probes lost"));
  EXPECT_THAT(text, HasSubstr("not probed:\n  a2: not reporting"));

  status.clear_verdicts();
  status.set_meets_detection_target(true);
  EXPECT_THAT(FormatPingmeshStatus(status), HasSubstr("no verdicts"));
  EXPECT_THAT(FormatPingmeshStatus(status), Not(HasSubstr("detection target")));
  EXPECT_THAT(FormatPingmeshStatus(weft::v1::PingmeshStatus()), HasSubstr("pingmesh is off"));
}

TEST(PingmeshCommandTest, MatrixShowsLossAndRttPerPair) {
  weft::v1::PingmeshMatrix matrix;
  EXPECT_EQ(FormatPingmeshMatrix(matrix), "no probe windows judged yet\n");
  weft::v1::PingmeshMatrixCell* cell = matrix.add_cells();
  cell->set_source("rack-a");
  cell->set_destination("rack-b");
  cell->set_sent(4000);
  cell->set_lost(4);
  cell->set_loss_ratio(0.001);
  cell->set_rtt_p99_us(30.25);
  weft::v1::PingmeshMatrixCell* dark = matrix.add_cells();
  dark->set_source("rack-b");
  dark->set_destination("rack-a");
  dark->set_sent(10);
  dark->set_lost(10);
  dark->set_loss_ratio(1);
  const std::string text = FormatPingmeshMatrix(matrix);
  EXPECT_THAT(text, HasSubstr("rack-a"));
  EXPECT_THAT(text, HasSubstr("0.1%"));
  EXPECT_THAT(text, HasSubstr("30.2"));
  EXPECT_THAT(text, HasSubstr("100%"));
}

TEST(PingmeshCommandTest, CheckSaysPassOrFailPerNodeAndWhatIsBlamed) {
  weft::v1::CheckResponse check;
  check.set_passed(false);
  check.set_streams(40);
  check.set_probes_per_stream_per_s(25);
  weft::v1::NodeCheck* ok = check.add_nodes();
  ok->set_node("a1");
  ok->set_passed(true);
  ok->set_sent(1000);
  weft::v1::NodeCheck* bad = check.add_nodes();
  bad->set_node("a3");
  bad->set_reason("blamed: nic a3/mlx5_1 (unreachable)");
  bad->set_sent(1000);
  bad->set_lost(500);
  weft::v1::PingmeshVerdict* v = check.add_verdicts();
  v->set_kind("nic");
  v->set_component("a3/mlx5_1");
  v->set_problem("unreachable");
  v->set_evidence("120 of 120 probes lost");
  const std::string text = FormatCheck(check);
  EXPECT_THAT(text, ::testing::StartsWith("FAIL: 2 nodes, 40 probe streams at 25 probes/s"));
  EXPECT_THAT(text, HasSubstr("a1"));
  EXPECT_THAT(text, HasSubstr("pass"));
  EXPECT_THAT(text, HasSubstr("blamed: nic a3/mlx5_1 (unreachable)"));
  EXPECT_THAT(text, HasSubstr("  nic a3/mlx5_1 (unreachable): 120 of 120 probes lost"));
  check.set_passed(true);
  EXPECT_THAT(FormatCheck(check), ::testing::StartsWith("PASS"));
}

}  // namespace
}  // namespace weft
