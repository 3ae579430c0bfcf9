#include "agent/sim_faults.h"

#include <vector>

#include "gtest/gtest.h"

namespace weft::agent {
namespace {

// Records what reaches the controller.
class RecordingStream : public ControllerStream {
 public:
  explicit RecordingStream(std::vector<weft::v1::AgentMessage>* sent) : sent_(sent) {}
  absl::Status Write(const weft::v1::AgentMessage& message) override {
    sent_->push_back(message);
    return absl::OkStatus();
  }
  bool Read(weft::v1::ControllerMessage*) override { return false; }
  void Cancel() override {}
  absl::Status Finish() override { return absl::OkStatus(); }

 private:
  std::vector<weft::v1::AgentMessage>* sent_;
};

class RecordingClient : public ControllerClient {
 public:
  absl::StatusOr<weft::v1::RegisterResponse> Register(const weft::v1::RegisterRequest&) override {
    ++registers;
    return weft::v1::RegisterResponse();
  }
  absl::StatusOr<std::unique_ptr<ControllerStream>> Connect(const weft::v1::StreamHello&) override {
    return std::unique_ptr<ControllerStream>(new RecordingStream(&sent));
  }
  void Shutdown() override { shut_down = true; }
  int registers = 0;
  bool shut_down = false;
  std::vector<weft::v1::AgentMessage> sent;
};

weft::v1::AgentConfig Simulated(std::initializer_list<weft::v1::SimFault> faults) {
  weft::v1::AgentConfig config;
  config.set_backend("simulated");
  for (weft::v1::SimFault fault : faults) config.mutable_simulated()->add_faults(fault);
  return config;
}

TEST(SimFaultsTest, DeadNodeRegistersAndAcksButItsTelemetryIsLost) {
  RecordingClient inner;
  std::unique_ptr<ControllerClient> dead =
      WrapForSimulatedFaults(Simulated({weft::v1::SIM_FAULT_DEAD}), &inner);
  ASSERT_NE(dead, nullptr);
  ASSERT_TRUE(dead->Register(weft::v1::RegisterRequest()).ok());
  EXPECT_EQ(inner.registers, 1);
  auto stream = dead->Connect(weft::v1::StreamHello());
  ASSERT_TRUE(stream.ok());
  weft::v1::AgentMessage telemetry;
  telemetry.mutable_telemetry()->set_collected_at_us(1);
  weft::v1::AgentMessage ack;
  ack.mutable_desired_state_ack()->set_version(3);
  EXPECT_TRUE((*stream)->Write(telemetry).ok());
  EXPECT_TRUE((*stream)->Write(ack).ok());
  ASSERT_EQ(inner.sent.size(), 1u);
  EXPECT_EQ(inner.sent[0].desired_state_ack().version(), 3u);
  dead->Shutdown();
  EXPECT_TRUE(inner.shut_down);
}

TEST(SimFaultsTest, OnlyConnectionFaultsOfTheSimulatedBackendWrap) {
  RecordingClient inner;
  EXPECT_EQ(WrapForSimulatedFaults(Simulated({weft::v1::SIM_FAULT_PFC_STORM}), &inner), nullptr);
  weft::v1::AgentConfig linux_config = Simulated({weft::v1::SIM_FAULT_DEAD});
  linux_config.set_backend("linux");
  EXPECT_EQ(WrapForSimulatedFaults(linux_config, &inner), nullptr);
}

}  // namespace
}  // namespace weft::agent
