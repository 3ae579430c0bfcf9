#include "agent/sim_faults.h"

#include <algorithm>
#include <utility>

#include "common/logging.h"

namespace weft::agent {
namespace {

// A stream whose telemetry is lost on the way; every other message (hello, acks) goes.
class TelemetryLostStream : public ControllerStream {
 public:
  explicit TelemetryLostStream(std::unique_ptr<ControllerStream> inner)
      : inner_(std::move(inner)) {}
  absl::Status Write(const weft::v1::AgentMessage& message) override {
    if (message.has_telemetry()) return absl::OkStatus();
    return inner_->Write(message);
  }
  bool Read(weft::v1::ControllerMessage* message) override { return inner_->Read(message); }
  void Cancel() override { inner_->Cancel(); }
  absl::Status Finish() override { return inner_->Finish(); }

 private:
  std::unique_ptr<ControllerStream> inner_;
};

class DeadNodeClient : public ControllerClient {
 public:
  explicit DeadNodeClient(ControllerClient* inner) : inner_(inner) {}
  absl::StatusOr<weft::v1::RegisterResponse> Register(
      const weft::v1::RegisterRequest& request) override {
    return inner_->Register(request);
  }
  absl::StatusOr<std::unique_ptr<ControllerStream>> Connect(
      const weft::v1::StreamHello& hello) override {
    absl::StatusOr<std::unique_ptr<ControllerStream>> stream = inner_->Connect(hello);
    if (!stream.ok()) return stream.status();
    return std::unique_ptr<ControllerStream>(new TelemetryLostStream(*std::move(stream)));
  }
  void Shutdown() override { inner_->Shutdown(); }

 private:
  ControllerClient* inner_;
};

}  // namespace

std::unique_ptr<ControllerClient> WrapForSimulatedFaults(const weft::v1::AgentConfig& config,
                                                         ControllerClient* inner) {
  if (config.backend() != "simulated") return nullptr;
  const auto& faults = config.simulated().faults();
  if (std::find(faults.begin(), faults.end(), weft::v1::SIM_FAULT_DEAD) == faults.end()) {
    return nullptr;
  }
  WEFT_LOG(WARNING) << "simulated fault dead: registering but no telemetry reaches the "
                       "controller";
  return std::make_unique<DeadNodeClient>(inner);
}

}  // namespace weft::agent
