#include "agent/controller_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "grpcpp/support/sync_stream.h"

namespace weft::agent {

class GrpcControllerStream : public ControllerStream {
 public:
  using Stream = grpc::ClientReaderWriter<weft::v1::AgentMessage, weft::v1::ControllerMessage>;

  GrpcControllerStream(GrpcControllerClient* client, std::unique_ptr<grpc::ClientContext> context,
                       std::unique_ptr<Stream> stream)
      : client_(client), context_(std::move(context)), stream_(std::move(stream)) {}

  ~GrpcControllerStream() override {
    if (!finished_) {
      // gRPC wants every stream finished; drain what is left of a cancelled one.
      context_->TryCancel();
      weft::v1::ControllerMessage ignored;
      while (stream_->Read(&ignored)) {
      }
      stream_->Finish().ok();
    }
    client_->Untrack(context_.get());
  }

  absl::Status Write(const weft::v1::AgentMessage& message) override {
    absl::MutexLock lock(&write_mu_);
    if (!stream_->Write(message)) {
      return absl::UnavailableError("controller stream closed");
    }
    return absl::OkStatus();
  }

  bool Read(weft::v1::ControllerMessage* message) override { return stream_->Read(message); }

  void Cancel() override { context_->TryCancel(); }

  absl::Status Finish() override {
    finished_ = true;
    return FromGrpcStatus(stream_->Finish());
  }

 private:
  GrpcControllerClient* const client_;
  const std::unique_ptr<grpc::ClientContext> context_;
  const std::unique_ptr<Stream> stream_;
  absl::Mutex write_mu_;
  bool finished_ = false;  // touched by the reading thread only
};

namespace {

int ToMillis(absl::Duration d) {
  return static_cast<int>(std::max<int64_t>(1, absl::ToInt64Milliseconds(d)));
}

}  // namespace

GrpcControllerClient::GrpcControllerClient(GrpcControllerClientOptions options)
    : options_(std::move(options)) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, ToMillis(options_.min_reconnect_backoff));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, ToMillis(options_.min_reconnect_backoff));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, ToMillis(options_.max_reconnect_backoff));
  channel_ = grpc::CreateCustomChannel(
      options_.address,
      options_.credentials ? options_.credentials : grpc::InsecureChannelCredentials(), args);
  stub_ = weft::v1::AgentService::NewStub(channel_);
}

GrpcControllerClient::~GrpcControllerClient() { Shutdown(); }

bool GrpcControllerClient::Track(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return false;
  active_.insert(context);
  return true;
}

void GrpcControllerClient::Untrack(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  active_.erase(context);
}

void GrpcControllerClient::Shutdown() {
  absl::MutexLock lock(&mu_);
  shut_down_ = true;
  for (grpc::ClientContext* context : active_) context->TryCancel();
}

absl::StatusOr<weft::v1::RegisterResponse> GrpcControllerClient::Register(
    const weft::v1::RegisterRequest& request) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + options_.register_timeout));
  if (!Track(&context)) return absl::CancelledError("controller client is shut down");
  weft::v1::RegisterResponse response;
  const grpc::Status status = stub_->Register(&context, request, &response);
  Untrack(&context);
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE && options_.credentials != nullptr) {
    // A controller that refuses this node's certificate (expired, or from another CA)
    // closes the TLS connection, which gRPC reports only as UNAVAILABLE.
    return absl::UnavailableError(absl::StrCat(
        status.error_message(),
        " (with TLS this is also how a refused certificate shows: check that this node's "
        "certificate is signed by the controller's CA and still valid)"));
  }
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::StatusOr<std::unique_ptr<ControllerStream>> GrpcControllerClient::Connect(
    const weft::v1::StreamHello& hello) {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!Track(context.get())) return absl::CancelledError("controller client is shut down");
  std::unique_ptr<GrpcControllerStream::Stream> raw = stub_->Connect(context.get());
  auto stream = std::make_unique<GrpcControllerStream>(this, std::move(context), std::move(raw));
  weft::v1::AgentMessage message;
  *message.mutable_hello() = hello;
  if (!stream->Write(message).ok()) {
    // The call already failed: Read() returns false at once and Finish() says why.
    weft::v1::ControllerMessage ignored;
    while (stream->Read(&ignored)) {
    }
    const absl::Status status = stream->Finish();
    return status.ok() ? absl::UnavailableError("controller closed the stream at hello") : status;
  }
  return std::unique_ptr<ControllerStream>(std::move(stream));
}

}  // namespace weft::agent
