#include "controller/grpc_status.h"

#include "gtest/gtest.h"

namespace weft::controller {
namespace {

TEST(ToGrpcStatusTest, OkStaysOk) { EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok()); }

TEST(ToGrpcStatusTest, CodeAndMessagePassThrough) {
  const grpc::Status aborted =
      ToGrpcStatus(absl::AbortedError("session 1 of node n1 was superseded by session 2"));
  EXPECT_EQ(aborted.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_EQ(aborted.error_message(), "session 1 of node n1 was superseded by session 2");

  EXPECT_EQ(ToGrpcStatus(absl::NotFoundError("x")).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ToGrpcStatus(absl::FailedPreconditionError("x")).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(ToGrpcStatus(absl::InvalidArgumentError("x")).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ToGrpcStatus(absl::UnavailableError("x")).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace weft::controller
