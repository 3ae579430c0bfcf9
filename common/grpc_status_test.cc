#include "common/grpc_status.h"

#include "gtest/gtest.h"

namespace weft {
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

TEST(FromGrpcStatusTest, OkStaysOkAndCodeAndMessagePassThrough) {
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
  const absl::Status unavailable =
      FromGrpcStatus(grpc::Status(grpc::StatusCode::UNAVAILABLE, "controller 10.0.0.1:7400 down"));
  EXPECT_EQ(unavailable.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(unavailable.message(), "controller 10.0.0.1:7400 down");
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "x")).code(),
            absl::StatusCode::kPermissionDenied);
}

TEST(GrpcStatusTest, EveryCodeRoundTrips) {
  for (int code = 1; code <= 16; ++code) {
    const absl::Status status(static_cast<absl::StatusCode>(code), "why");
    EXPECT_EQ(FromGrpcStatus(ToGrpcStatus(status)), status) << code;
  }
}

}  // namespace
}  // namespace weft
