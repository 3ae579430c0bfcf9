#include "common/qos_classes.h"

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

TEST(QosClassesTest, TrainingIsTheDefaultAndDscp26WithEct0) {
  absl::StatusOr<QosClass> c = FindQosClass("");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->name, "training");
  EXPECT_EQ(c->dscp, 26u);
  EXPECT_EQ(c->traffic_class, 106u);  // 26 << 2 | 0b10
  EXPECT_EQ(QosClasses().front().name, "training");
}

TEST(QosClassesTest, EachClassCarriesItsDscpShiftedWithEct0) {
  EXPECT_EQ(FindQosClass("storage")->dscp, 24u);
  EXPECT_EQ(FindQosClass("storage")->traffic_class, 98u);
  EXPECT_EQ(FindQosClass("control")->dscp, 16u);
  EXPECT_EQ(FindQosClass("control")->traffic_class, 66u);
  for (const QosClass& q : QosClasses()) {
    EXPECT_LE(q.dscp, 63u) << q.name;
    EXPECT_NE(q.dscp, 48u) << q.name << " must not share the CNPs' DSCP";
    EXPECT_EQ(q.traffic_class, q.dscp << 2 | 2) << q.name;
  }
}

TEST(QosClassesTest, UnknownClassNamesTheAcceptedOnes) {
  absl::StatusOr<QosClass> c = FindQosClass("bulk");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(),
            "unknown qos_class 'bulk'; accepted: training, storage, control");
  EXPECT_FALSE(FindQosClass("Training").ok()) << "names are exact";
}

}  // namespace
}  // namespace weft
