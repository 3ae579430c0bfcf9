#include "bench/ingest/synthetic_node.h"

#include <cmath>
#include <utility>

#include "agent/counter_math.h"
#include "agent/nic_backend.h"
#include "agent/sim_backend.h"
#include "agent/stable_hash.h"
#include "common/fake_clock.h"
#include "common/status_macros.h"
#include "proto/weft/v1/config.pb.h"

namespace weft::bench {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kWavePeriodS = 30;
constexpr double kWaveAmplitude = 0.1;

// Every Counter the message carries, found through reflection once per node.
void CollectCounters(google::protobuf::Message* message,
                     std::vector<weft::v1::Counter*>* out) {
  const google::protobuf::Reflection* reflection = message->GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(*message, &fields);  // set fields only
  for (const google::protobuf::FieldDescriptor* field : fields) {
    if (field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
        CollectCounters(reflection->MutableRepeatedMessage(message, field, i), out);
      }
      continue;
    }
    google::protobuf::Message* child = reflection->MutableMessage(message, field);
    if (field->message_type() == weft::v1::Counter::descriptor()) {
      out->push_back(static_cast<weft::v1::Counter*>(child));
    } else {
      CollectCounters(child, out);
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<SyntheticNode>> SyntheticNode::Create(const std::string& name,
                                                                     uint32_t nics,
                                                                     uint32_t gpus,
                                                                     absl::Time now) {
  weft::v1::SimulatedBackendConfig config;
  config.set_nics(nics);
  config.set_gpus(gpus);
  config.set_link_speed_gbps(400);
  config.set_traffic_level(0.6);
  // The template is two readings one second apart, ending at `now`.
  FakeClock clock(now - absl::Seconds(1));
  ASSIGN_OR_RETURN(std::unique_ptr<agent::SimBackend> backend,
                   agent::SimBackend::Create(config, name, &clock));
  ASSIGN_OR_RETURN(agent::NodeInventory inventory, backend->Discover());
  ASSIGN_OR_RETURN(std::vector<agent::RawNicReading> previous, backend->ReadCounters());
  clock.Set(now);
  ASSIGN_OR_RETURN(std::vector<agent::RawNicReading> current, backend->ReadCounters());

  std::unique_ptr<SyntheticNode> node(new SyntheticNode());
  node->info_.set_name(name);
  node->info_.set_agent_version("bench-ingest");
  for (weft::v1::Nic& nic : inventory.nics) *node->info_.add_nics() = std::move(nic);
  for (weft::v1::Gpu& gpu : inventory.gpus) *node->info_.add_gpus() = std::move(gpu);

  weft::v1::TelemetryBatch* batch = node->message_.mutable_telemetry();
  batch->set_collected_at_us(absl::ToUnixMicros(now));
  for (size_t i = 0; i < current.size(); ++i) {
    *batch->add_samples() = agent::ComputeNicUpdate(&previous[i], current[i]).sample;
  }
  const uint64_t hash = agent::StableHash(name);
  for (int i = 0; i < batch->samples_size(); ++i) {
    Nic& nic = node->nics_.emplace_back();
    nic.sample = batch->mutable_samples(i);
    nic.wave_phase = 2 * kPi * static_cast<double>(agent::MixBits(hash + i) % 1000) / 1000;
    std::vector<weft::v1::Counter*> counters;
    CollectCounters(nic.sample, &counters);
    for (weft::v1::Counter* counter : counters) {
      nic.series.push_back(Series{counter, counter->per_second()});
    }
  }
  node->last_ = now;
  return node;
}

weft::v1::AgentMessage& SyntheticNode::NextBatch(absl::Time now) {
  weft::v1::TelemetryBatch* batch = message_.mutable_telemetry();
  const int64_t now_us = absl::ToUnixMicros(now);
  batch->set_collected_at_us(now_us);
  if (first_ || now <= last_) {
    // The template's counters stand for this reading; the next one counts from here.
    if (first_ && now > last_) last_ = now;
    first_ = false;
    for (Nic& nic : nics_) nic.sample->set_timestamp_us(now_us);
    return message_;
  }
  const double dt_s = absl::ToDoubleSeconds(now - last_);
  const double t_s = absl::ToDoubleSeconds(now - absl::UnixEpoch());
  last_ = now;
  for (Nic& nic : nics_) {
    const double factor =
        1 + kWaveAmplitude * std::sin(2 * kPi * t_s / kWavePeriodS + nic.wave_phase);
    nic.sample->set_timestamp_us(now_us);
    nic.sample->set_rates_valid(true);
    for (Series& s : nic.series) {
      const uint64_t increase =
          static_cast<uint64_t>(std::llround(s.base_per_second * factor * dt_s));
      s.counter->set_total(s.counter->total() + increase);
      s.counter->set_per_second(static_cast<double>(increase) / dt_s);
    }
  }
  return message_;
}

}  // namespace weft::bench
