#include "common/yaml_proto.h"

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/testing/temp_dir.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/config.pb.h"
#include "proto/weft/v1/options.pb.h"

namespace weft {
namespace {

using ::google::protobuf::Message;
using ::weft::v1::AgentConfig;
using ::weft::v1::SimFault;

constexpr char kAgentKeys[] =
    "node_name, rack, pod, controller_address, metrics_address, interval_ms, backend, "
    "simulated, reconnect, health_address, linux, fabric, lldp, tunables_dry_run, "
    "drift_check_interval_ms, tls, insecure, job_socket, probe";
constexpr char kSimulatedKeys[] =
    "nics, gpus, link_speed_gbps, traffic_level, seed, faults, fault_delay_ms, nic_ipv4";
constexpr char kFaultNames[] =
    "one of none, pfc_storm, link_down, retransmits, dead, reject_tunables (any case; the "
    "SIM_FAULT_ prefix is optional)";

// The daemon's defaults live in daemon_config; this test only needs some non-zero
// values to see that absent keys keep them.
AgentConfig SomeAgentConfig() {
  AgentConfig config;
  config.set_node_name("n1");
  config.set_controller_address("127.0.0.1:7400");
  config.set_interval_ms(1000);
  config.set_backend("simulated");
  config.set_lldp("auto");
  config.mutable_simulated()->set_nics(8);
  config.mutable_simulated()->set_gpus(8);
  config.mutable_simulated()->set_link_speed_gbps(400);
  config.mutable_simulated()->set_traffic_level(0.6);
  config.mutable_reconnect()->set_initial_backoff_ms(200);
  config.mutable_reconnect()->set_max_backoff_ms(10000);
  config.set_job_socket("/run/weft/agent.sock");
  return config;
}

// Merges `yaml` into a copy of SomeAgentConfig() and returns the error message ("" on
// success).
std::string AgentError(absl::string_view yaml) {
  AgentConfig config = SomeAgentConfig();
  const absl::Status status = MergeYamlString(yaml, "t.yaml", &config);
  if (!status.ok()) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  }
  return std::string(status.message());
}

// ---------------------------------------------------------------------------
// Good input, on the real agent schema.

TEST(MergeYamlTest, NestedValuesMergeAndAbsentKeysKeepDefaults) {
  AgentConfig config = SomeAgentConfig();
  ASSERT_TRUE(MergeYamlString("node_name: gpu-7\n"
                              "rack: 12\n"  // a number-like scalar is fine for a string
                              "simulated:\n"
                              "  nics: 4\n"
                              "  traffic_level: 0.25\n"
                              "  seed: 18446744073709551615\n"
                              "reconnect: {max_backoff_ms: 5000}\n",
                              "t.yaml", &config)
                  .ok());
  AgentConfig expected = SomeAgentConfig();
  expected.set_node_name("gpu-7");
  expected.set_rack("12");
  expected.mutable_simulated()->set_nics(4);
  expected.mutable_simulated()->set_traffic_level(0.25);
  expected.mutable_simulated()->set_seed(18446744073709551615u);
  expected.mutable_reconnect()->set_max_backoff_ms(5000);
  EXPECT_EQ(config.DebugString(), expected.DebugString());
}

TEST(MergeYamlTest, EnumSpellings) {
  AgentConfig config;
  ASSERT_TRUE(MergeYamlString("simulated:\n"
                              "  faults: [pfc_storm, PFC_STORM, SIM_FAULT_PFC_STORM,\n"
                              "           Link_Down, sim_fault_dead, none]\n",
                              "t.yaml", &config)
                  .ok());
  const auto& faults = config.simulated().faults();
  ASSERT_EQ(faults.size(), 6);
  EXPECT_EQ(faults[0], v1::SIM_FAULT_PFC_STORM);
  EXPECT_EQ(faults[1], v1::SIM_FAULT_PFC_STORM);
  EXPECT_EQ(faults[2], v1::SIM_FAULT_PFC_STORM);
  EXPECT_EQ(faults[3], v1::SIM_FAULT_LINK_DOWN);
  EXPECT_EQ(faults[4], v1::SIM_FAULT_DEAD);
  EXPECT_EQ(faults[5], v1::SIM_FAULT_NONE);
}

TEST(MergeYamlTest, SequenceReplacesRepeatedField) {
  AgentConfig config;
  config.mutable_simulated()->add_faults(v1::SIM_FAULT_DEAD);
  config.mutable_simulated()->add_faults(v1::SIM_FAULT_RETRANSMITS);
  ASSERT_TRUE(
      MergeYamlString("simulated:\n  faults:\n    - link_down\n", "t.yaml", &config)
          .ok());
  ASSERT_EQ(config.simulated().faults_size(), 1);
  EXPECT_EQ(config.simulated().faults(0), v1::SIM_FAULT_LINK_DOWN);

  ASSERT_TRUE(MergeYamlString("simulated: {faults: []}", "t.yaml", &config).ok());
  EXPECT_EQ(config.simulated().faults_size(), 0);
}

TEST(MergeYamlTest, EmptyDocumentsMeanNoOverrides) {
  for (const char* yaml : {"", "\n\n", "# only a comment\n", "---\n", "~\n", "null"}) {
    AgentConfig config = SomeAgentConfig();
    EXPECT_TRUE(MergeYamlString(yaml, "t.yaml", &config).ok()) << "'" << yaml << "'";
    EXPECT_EQ(config.DebugString(), SomeAgentConfig().DebugString())
        << "'" << yaml << "'";
  }
}

TEST(MergeYamlTest, NullSubmessageMeansNoOverrides) {
  AgentConfig config = SomeAgentConfig();
  ASSERT_TRUE(MergeYamlString("simulated:\n  # nothing to change\nreconnect: ~\n",
                              "t.yaml", &config)
                  .ok());
  EXPECT_EQ(config.DebugString(), SomeAgentConfig().DebugString());
}

// ---------------------------------------------------------------------------
// Bad input, on the real agent schema: exact messages.

TEST(MergeYamlErrorTest, OutOfRangeNamesFileLineColumnFieldValueAndRange) {
  AgentConfig config = SomeAgentConfig();
  const absl::Status status = MergeYamlString(
      "# agent\n\n\n\nrack: a\nsimulated:\n  nics:      64\n", "agent.yaml", &config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "agent.yaml:7:14: field 'simulated.nics': value '64' is out of range; "
            "accepted: an integer from 1 to 32");
}

TEST(MergeYamlErrorTest, OutOfRangeDoubleAndBelowMinimum) {
  EXPECT_EQ(AgentError("simulated:\n  traffic_level: 1.5\n"),
            "t.yaml:2:18: field 'simulated.traffic_level': value '1.5' is out of range; "
            "accepted: a number from 0 to 1");
  EXPECT_EQ(AgentError("simulated:\n  traffic_level: -0.1\n"),
            "t.yaml:2:18: field 'simulated.traffic_level': value '-0.1' is out of range; "
            "accepted: a number from 0 to 1");
  EXPECT_EQ(AgentError("interval_ms: 99\n"),
            "t.yaml:1:14: field 'interval_ms': value '99' is out of range; accepted: an "
            "integer from 100 to 60000");
}

TEST(MergeYamlErrorTest, UnknownKeyListsAcceptedKeys) {
  EXPECT_EQ(AgentError("nodename: x\n"),
            absl::StrCat("t.yaml:1:1: field 'nodename': unknown key; accepted: one of ",
                         kAgentKeys));
  EXPECT_EQ(
      AgentError("simulated:\n  nics: 4\n  nic: 4\n"),
      absl::StrCat("t.yaml:3:3: field 'simulated.nic': unknown key; accepted: one of ",
                   kSimulatedKeys));
  // Keys are the proto field names, not their JSON (camelCase) spelling.
  EXPECT_EQ(AgentError("intervalMs: 100\n"),
            absl::StrCat("t.yaml:1:1: field 'intervalMs': unknown key; accepted: one of ",
                         kAgentKeys));
}

TEST(MergeYamlErrorTest, WrongScalarForIntegers) {
  EXPECT_EQ(AgentError("interval_ms: fast\n"),
            "t.yaml:1:14: field 'interval_ms': value 'fast' is not an integer; accepted: "
            "an integer from 100 to 60000");
  EXPECT_EQ(AgentError("simulated:\n  nics: 2.5\n"),
            "t.yaml:2:9: field 'simulated.nics': value '2.5' is a fraction; accepted: an "
            "integer from 1 to 32");
  EXPECT_EQ(AgentError("simulated:\n  nics: 0x10\n"),
            "t.yaml:2:9: field 'simulated.nics': value '0x10' is not an integer; "
            "accepted: an integer from 1 to 32");
  EXPECT_EQ(AgentError("simulated:\n  seed: -1\n"),
            "t.yaml:2:9: field 'simulated.seed': value '-1' is negative; accepted: an "
            "integer from 0 to 18446744073709551615");
  EXPECT_EQ(AgentError("interval_ms: 4294967296\n"),
            "t.yaml:1:14: field 'interval_ms': value '4294967296' overflows a 32-bit "
            "unsigned integer; accepted: an integer from 100 to 60000");
  EXPECT_EQ(
      AgentError("simulated:\n  seed: 18446744073709551616\n"),
      "t.yaml:2:9: field 'simulated.seed': value '18446744073709551616' overflows a "
      "64-bit unsigned integer; accepted: an integer from 0 to 18446744073709551615");
  EXPECT_EQ(AgentError("simulated:\n  seed: 123456789012345678901234567890\n"),
            "t.yaml:2:9: field 'simulated.seed': value '123456789012345678901234567890' "
            "overflows a 64-bit unsigned integer; accepted: an integer from 0 to "
            "18446744073709551615");
}

TEST(MergeYamlErrorTest, WrongScalarForNumberAndString) {
  EXPECT_EQ(AgentError("simulated:\n  traffic_level: high\n"),
            "t.yaml:2:18: field 'simulated.traffic_level': value 'high' is not a number; "
            "accepted: a number from 0 to 1");
  EXPECT_EQ(AgentError("simulated:\n  traffic_level: nan\n"),
            "t.yaml:2:18: field 'simulated.traffic_level': value 'nan' is not a number; "
            "accepted: a number from 0 to 1");
  EXPECT_EQ(
      AgentError("backend: \"\"\n"),
      "t.yaml:1:10: field 'backend': value '' is empty; accepted: a non-empty string");
  // `required` alone also refuses an explicit empty string.
  EXPECT_EQ(AgentError("node_name: ''\n"),
            "t.yaml:1:12: field 'node_name': value '' is empty; accepted: a non-empty "
            "string");
}

TEST(MergeYamlErrorTest, WrongNodeKind) {
  EXPECT_EQ(AgentError("interval_ms: {a: 1}\n"),
            "t.yaml:1:14: field 'interval_ms': value is a map; accepted: an integer from "
            "100 to 60000");
  EXPECT_EQ(AgentError("backend:\n  - simulated\n"),
            "t.yaml:2:3: field 'backend': value is a sequence; accepted: a non-empty "
            "string");
  EXPECT_EQ(AgentError("simulated: 4\n"),
            absl::StrCat("t.yaml:1:12: field 'simulated': value '4' is a scalar; "
                         "accepted: a map with the keys ",
                         kSimulatedKeys));
  EXPECT_EQ(AgentError("simulated:\n  faults: pfc_storm\n"),
            absl::StrCat("t.yaml:2:11: field 'simulated.faults': value 'pfc_storm' is a "
                         "scalar; accepted: a sequence whose items are each ",
                         kFaultNames));
  EXPECT_EQ(AgentError("simulated:\n  faults: [[pfc_storm]]\n"),
            absl::StrCat("t.yaml:2:12: field 'simulated.faults[0]': value is a sequence; "
                         "accepted: ",
                         kFaultNames));
}

TEST(MergeYamlErrorTest, NullForScalarPointsAtTheKey) {
  EXPECT_EQ(AgentError("rack: a\ninterval_ms:\nbackend: simulated\n"),
            "t.yaml:2:1: field 'interval_ms': no value given; accepted: an integer from "
            "100 to 60000");
  EXPECT_EQ(
      AgentError("node_name: ~\n"),
      "t.yaml:1:1: field 'node_name': no value given; accepted: a non-empty string");
  EXPECT_EQ(
      AgentError("simulated:\n  faults:\n"),
      absl::StrCat("t.yaml:2:3: field 'simulated.faults': no value given; accepted: "
                   "a sequence whose items are each ",
                   kFaultNames));
}

TEST(MergeYamlErrorTest, UnknownEnumValueListsNames) {
  EXPECT_EQ(AgentError("simulated:\n  faults: [link_down, pfc]\n"),
            absl::StrCat("t.yaml:2:23: field 'simulated.faults[1]': value 'pfc' is not a "
                         "SimFault name; accepted: ",
                         kFaultNames));
  // Only the whole type prefix may be dropped, and numbers are not names.
  EXPECT_EQ(AgentError("simulated:\n  faults: [FAULT_PFC_STORM]\n"),
            absl::StrCat("t.yaml:2:12: field 'simulated.faults[0]': value "
                         "'FAULT_PFC_STORM' is not a SimFault name; accepted: ",
                         kFaultNames));
  EXPECT_EQ(AgentError("simulated:\n  faults: [1]\n"),
            absl::StrCat("t.yaml:2:12: field 'simulated.faults[0]': value '1' is not a "
                         "SimFault name; accepted: ",
                         kFaultNames));
}

TEST(MergeYamlErrorTest, DuplicateKeys) {
  EXPECT_EQ(AgentError("interval_ms: 100\nrack: a\ninterval_ms: 200\n"),
            "t.yaml:3:1: field 'interval_ms': duplicate key (first at line 1, column 1); "
            "accepted: each key at most once");
  EXPECT_EQ(AgentError("reconnect:\n  max_backoff_ms: 100\n  max_backoff_ms: 100\n"),
            "t.yaml:3:3: field 'reconnect.max_backoff_ms': duplicate key (first at line "
            "2, column 3); accepted: each key at most once");
}

TEST(MergeYamlErrorTest, SyntaxErrorsBecomeStatuses) {
  EXPECT_EQ(AgentError("rack: a\n bad: 2\n"),
            "t.yaml:2:5: YAML syntax error: illegal map value");
  EXPECT_EQ(AgentError("simulated:\n  faults: [pfc_storm,\n"),
            "t.yaml:3:1: YAML syntax error: end of sequence flow not found");
  EXPECT_EQ(AgentError("rack: *nowhere\n"),
            "t.yaml:1:7: YAML syntax error: the referenced anchor is not defined");
}

TEST(MergeYamlErrorTest, DocumentMustBeASingleMap) {
  EXPECT_EQ(AgentError("- a\n- b\n"),
            absl::StrCat("t.yaml:1:1: the document is a sequence, not a map; accepted: a "
                         "map with the keys ",
                         kAgentKeys));
  EXPECT_EQ(AgentError("hello\n"),
            absl::StrCat("t.yaml:1:1: the document is the scalar 'hello', not a map; "
                         "accepted: a map with the keys ",
                         kAgentKeys));
  EXPECT_EQ(AgentError("rack: a\n---\nrack: b\n"),
            "t.yaml:3:1: the file holds more than one YAML document; accepted: a single "
            "document");
  // yaml-cpp 0.7 never ends LoadAll on a stray ',' (an endless run of empty
  // documents): this must come back at once with an error, not hang.
  EXPECT_EQ(AgentError(","), "t.yaml:1:1: YAML syntax error: unexpected character");
  EXPECT_EQ(AgentError("rack: a\n,\n"), "t.yaml:2:1: YAML syntax error: end of map not found");
}

TEST(MergeYamlErrorTest, NonScalarKey) {
  EXPECT_EQ(
      AgentError("? [a, b]\n: 1\n"),
      absl::StrCat("t.yaml:1:3: a key is a sequence; accepted: one of ", kAgentKeys));
  EXPECT_EQ(
      AgentError("simulated:\n  ? {a: 1}\n  : 1\n"),
      absl::StrCat("t.yaml:2:5: field 'simulated': a key is a map; accepted: one of ",
                   kSimulatedKeys));
}

// ---------------------------------------------------------------------------
// Files.

using weft::testing::TempPath;

TEST(MergeYamlFileTest, ErrorsNameThePath) {
  const std::string path = TempPath("bad_agent.yaml");
  std::ofstream(path) << "simulated:\n  gpus: 17\n";
  AgentConfig config;
  const absl::Status status = MergeYamlFile(path, &config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            absl::StrCat(path,
                         ":2:9: field 'simulated.gpus': value '17' is out of range; "
                         "accepted: an integer from 0 to 16"));
}

TEST(MergeYamlFileTest, LoadsAFile) {
  const std::string path = TempPath("good_agent.yaml");
  std::ofstream(path) << "node_name: n9\nsimulated:\n  gpus: 0\n";
  AgentConfig config = SomeAgentConfig();
  ASSERT_TRUE(MergeYamlFile(path, &config).ok());
  EXPECT_EQ(config.node_name(), "n9");
  EXPECT_EQ(config.simulated().gpus(), 0u);
  EXPECT_EQ(config.simulated().nics(), 8u);
}

TEST(MergeYamlFileTest, UnreadableFileIsNotFoundWithReason) {
  AgentConfig config;
  const std::string missing = TempPath("no_such_file.yaml");
  absl::Status status = MergeYamlFile(missing, &config);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), absl::StrCat("cannot read config file '", missing,
                                           "': No such file or directory"));

  const std::string directory = TempPath("");
  status = MergeYamlFile(directory, &config);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(),
            absl::StrCat("cannot read config file '", directory, "': Is a directory"));
}

// ---------------------------------------------------------------------------
// ValidateRules on the real agent schema.

TEST(ValidateRulesTest, AcceptsAValidConfig) {
  EXPECT_TRUE(ValidateRules(SomeAgentConfig(), "agent config").ok());
}

TEST(ValidateRulesTest, RangeNonEmptyAndRequired) {
  AgentConfig config = SomeAgentConfig();
  config.mutable_simulated()->set_nics(64);
  absl::Status status = ValidateRules(config, "agent config");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "agent config: field 'simulated.nics': value '64' is out of range; accepted: "
            "an integer from 1 to 32");

  config = SomeAgentConfig();
  config.mutable_simulated()->set_traffic_level(1.25);
  EXPECT_EQ(
      ValidateRules(config, "agent config").message(),
      "agent config: field 'simulated.traffic_level': value '1.25' is out of range; "
      "accepted: a number from 0 to 1");

  config = SomeAgentConfig();
  config.set_interval_ms(0);  // e.g. a flag set to 0
  EXPECT_EQ(ValidateRules(config, "agent config").message(),
            "agent config: field 'interval_ms': value '0' is out of range; accepted: an "
            "integer from 100 to 60000");

  config = SomeAgentConfig();
  config.clear_controller_address();
  EXPECT_EQ(ValidateRules(config, "agent config").message(),
            "agent config: field 'controller_address': value '' is empty; accepted: a "
            "non-empty string");

  config = SomeAgentConfig();
  config.clear_node_name();
  EXPECT_EQ(
      ValidateRules(config, "agent config").message(),
      "agent config: field 'node_name': required but not set; accepted: a non-empty "
      "string");

  // Without a context the message starts with the field.
  EXPECT_EQ(ValidateRules(config, "").message(),
            "field 'node_name': required but not set; accepted: a non-empty string");
}

// ---------------------------------------------------------------------------
// A schema with every kind of field, built at run time.

constexpr char kTestSchema[] = R"pb(
  name: "common/yaml_proto_test.proto"
  package: "weft.test"
  dependency: "proto/weft/v1/options.proto"
  syntax: "proto3"
  enum_type {
    name: "Color"
    value { name: "COLOR_UNSPECIFIED" number: 0 }
    value { name: "COLOR_DARK_RED" number: 1 }
    value { name: "BLUE" number: 2 }
  }
  message_type {
    name: "Child"
    field {
      name: "label"
      number: 1
      type: TYPE_STRING
      options {
        [weft.v1.rule] { non_empty: true }
      }
    }
    field {
      name: "weight"
      number: 2
      type: TYPE_INT32
      options {
        [weft.v1.rule] { min: -5 max: 5 }
      }
    }
  }
  message_type {
    name: "Everything"
    field { name: "i32" number: 1 type: TYPE_INT32 }
    field { name: "i64" number: 2 type: TYPE_INT64 }
    field { name: "u32" number: 3 type: TYPE_UINT32 }
    field { name: "u64" number: 4 type: TYPE_UINT64 }
    field { name: "f" number: 5 type: TYPE_FLOAT }
    field { name: "d" number: 6 type: TYPE_DOUBLE }
    field { name: "flag" number: 7 type: TYPE_BOOL }
    field { name: "s" number: 8 type: TYPE_STRING }
    field { name: "color" number: 9 type: TYPE_ENUM type_name: ".weft.test.Color" }
    field { name: "child" number: 10 type: TYPE_MESSAGE type_name: ".weft.test.Child" }
    field {
      name: "children"
      number: 11
      label: LABEL_REPEATED
      type: TYPE_MESSAGE
      type_name: ".weft.test.Child"
    }
    field {
      name: "ports"
      number: 12
      label: LABEL_REPEATED
      type: TYPE_INT32
      options {
        [weft.v1.rule] { min: 1 max: 65535 }
      }
    }
    field {
      name: "attrs"
      number: 13
      label: LABEL_REPEATED
      type: TYPE_MESSAGE
      type_name: ".weft.test.Everything.AttrsEntry"
    }
    field { name: "by_name" number: 14 type: TYPE_STRING oneof_index: 0 }
    field { name: "by_id" number: 15 type: TYPE_INT64 oneof_index: 0 }
    field {
      name: "ratio"
      number: 16
      type: TYPE_DOUBLE
      options {
        [weft.v1.rule] { min: 0.5 }
      }
    }
    field {
      name: "colors"
      number: 17
      label: LABEL_REPEATED
      type: TYPE_ENUM
      type_name: ".weft.test.Color"
    }
    field { name: "raw" number: 18 type: TYPE_BYTES }
    nested_type {
      name: "AttrsEntry"
      field { name: "key" number: 1 type: TYPE_STRING }
      field { name: "value" number: 2 type: TYPE_STRING }
      options { map_entry: true }
    }
    oneof_decl { name: "target" }
  }
  message_type {
    name: "Rules"
    field {
      name: "child"
      number: 1
      type: TYPE_MESSAGE
      type_name: ".weft.test.Child"
      options {
        [weft.v1.rule] { required: true }
      }
    }
    field {
      name: "count"
      number: 2
      type: TYPE_UINT32
      options {
        [weft.v1.rule] { required: true max: 10 }
      }
    }
    field {
      name: "tags"
      number: 3
      label: LABEL_REPEATED
      type: TYPE_STRING
      options {
        [weft.v1.rule] { required: true non_empty: true }
      }
    }
    field {
      name: "children"
      number: 4
      label: LABEL_REPEATED
      type: TYPE_MESSAGE
      type_name: ".weft.test.Child"
    }
    field {
      name: "levels"
      number: 5
      label: LABEL_REPEATED
      type: TYPE_DOUBLE
      options {
        [weft.v1.rule] { max: 1 }
      }
    }
  }
)pb";

class DynamicSchemaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The schema imports options.proto, which imports descriptor.proto.
    for (const google::protobuf::FileDescriptor* dependency :
         {google::protobuf::FileDescriptorProto::descriptor()->file(),
          weft::v1::FieldRule::descriptor()->file()}) {
      google::protobuf::FileDescriptorProto file;
      dependency->CopyTo(&file);
      ASSERT_NE(pool_.BuildFile(file), nullptr) << file.name();
    }
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kTestSchema, &file));
    ASSERT_NE(pool_.BuildFile(file), nullptr);
  }

  std::unique_ptr<Message> New(absl::string_view type) {
    const google::protobuf::Descriptor* descriptor =
        pool_.FindMessageTypeByName(absl::StrCat("weft.test.", type));
    EXPECT_NE(descriptor, nullptr) << type;
    return std::unique_ptr<Message>(factory_.GetPrototype(descriptor)->New());
  }

  // Merges into a fresh Everything; returns its text form, or the error message.
  std::string Merge(absl::string_view yaml) {
    std::unique_ptr<Message> msg = New("Everything");
    const absl::Status status = MergeYamlString(yaml, "t.yaml", msg.get());
    if (!status.ok()) {
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
      return std::string(status.message());
    }
    return msg->ShortDebugString();
  }

  google::protobuf::DescriptorPool pool_;
  google::protobuf::DynamicMessageFactory factory_{&pool_};
};

TEST_F(DynamicSchemaTest, EveryScalarType) {
  EXPECT_EQ(Merge("i32: -2147483648\n"
                  "i64: -9223372036854775808\n"
                  "u32: 4294967295\n"
                  "u64: '18446744073709551615'\n"
                  "f: 1.5\n"
                  "d: -2.5e-3\n"
                  "flag: True\n"
                  "s: \"two words\"\n"
                  "color: dark_red\n"),
            "i32: -2147483648 i64: -9223372036854775808 u32: 4294967295 "
            "u64: 18446744073709551615 f: 1.5 d: -0.0025 flag: true s: \"two words\" "
            "color: COLOR_DARK_RED");
  EXPECT_EQ(Merge("i32: +7\ni64: 9223372036854775807\nflag: FALSE\nd: 10\n"),
            "i32: 7 i64: 9223372036854775807 d: 10");
}

// Strings must be UTF-8 (or they would not survive the wire); bytes take any bytes.
TEST_F(DynamicSchemaTest, StringsAreUtf8BytesAreAnything) {
  EXPECT_EQ(Merge("s: \"gr\xc3\xbcn\"\n"), "s: \"gr\\303\\274n\"");
  EXPECT_EQ(Merge("s: cont\xb2ol\n"),
            "t.yaml:1:4: field 's': value 'cont\\xb2ol' is not UTF-8; accepted: UTF-8 text");
  EXPECT_EQ(Merge("raw: cont\xb2ol\n"), "raw: \"cont\\262ol\"");
}

TEST_F(DynamicSchemaTest, EnumWithoutCommonPrefix) {
  EXPECT_EQ(
      Merge("colors: [blue, COLOR_BLUE]\n"),
      "t.yaml:1:16: field 'colors[1]': value 'COLOR_BLUE' is not a Color name; "
      "accepted: one of unspecified, dark_red, blue (any case; the COLOR_ prefix is "
      "optional)");
  EXPECT_EQ(Merge("colors: [Blue, color_unspecified, Dark_Red]\n"),
            "colors: BLUE colors: COLOR_UNSPECIFIED colors: COLOR_DARK_RED");
}

TEST_F(DynamicSchemaTest, NestedAndRepeatedMessages) {
  EXPECT_EQ(Merge("child: {label: a, weight: -5}\n"
                  "children:\n"
                  "  - label: b\n"
                  "  -\n"
                  "  - {weight: 5}\n"
                  "ports: [80, 443]\n"),
            "child { label: \"a\" weight: -5 } children { label: \"b\" } children { } "
            "children { weight: 5 } ports: 80 ports: 443");
}

TEST_F(DynamicSchemaTest, SignedOverflow) {
  EXPECT_EQ(Merge("i32: 2147483648\n"),
            "t.yaml:1:6: field 'i32': value '2147483648' overflows a 32-bit signed "
            "integer; accepted: an integer from -2147483648 to 2147483647");
  EXPECT_EQ(Merge("i32: -2147483649\n"),
            "t.yaml:1:6: field 'i32': value '-2147483649' overflows a 32-bit signed "
            "integer; accepted: an integer from -2147483648 to 2147483647");
  EXPECT_EQ(Merge("i64: -9223372036854775809\n"),
            "t.yaml:1:6: field 'i64': value '-9223372036854775809' overflows a 64-bit "
            "signed integer; accepted: an integer from -9223372036854775808 to "
            "9223372036854775807");
  EXPECT_EQ(Merge("u32: -0\n"), "");  // zero, however it is written
}

TEST_F(DynamicSchemaTest, FloatingPointAndBool) {
  EXPECT_EQ(
      Merge("f: 1e39\n"),
      "t.yaml:1:4: field 'f': value '1e39' overflows a 32-bit floating-point number; "
      "accepted: a finite number");
  EXPECT_EQ(Merge("d: 1e999\n"),
            "t.yaml:1:4: field 'd': value '1e999' overflows a 64-bit floating-point "
            "number; accepted: a finite number");
  EXPECT_EQ(Merge("d: .inf\n"),
            "t.yaml:1:4: field 'd': value '.inf' is not a number; accepted: a finite "
            "number");
  EXPECT_EQ(Merge("ratio: 0.25\n"),
            "t.yaml:1:8: field 'ratio': value '0.25' is out of range; accepted: a number "
            ">= 0.5");
  EXPECT_EQ(Merge("flag: yes\n"),
            "t.yaml:1:7: field 'flag': value 'yes' is not a boolean; accepted: true or "
            "false");
}

TEST_F(DynamicSchemaTest, RulesOnRepeatedAndNestedElements) {
  EXPECT_EQ(Merge("ports: [80, 0]\n"),
            "t.yaml:1:13: field 'ports[1]': value '0' is out of range; accepted: an "
            "integer from 1 to 65535");
  EXPECT_EQ(Merge("children:\n  - {label: a}\n  - {label: b, weight: 9}\n"),
            "t.yaml:3:24: field 'children[1].weight': value '9' is out of range; "
            "accepted: an integer from -5 to 5");
  EXPECT_EQ(Merge("children: [7]\n"),
            "t.yaml:1:12: field 'children[0]': value '7' is a scalar; accepted: a map "
            "with the keys label, weight");
  EXPECT_EQ(Merge("child:\n  label: ''\n"),
            "t.yaml:2:10: field 'child.label': value '' is empty; accepted: a non-empty "
            "string");
}

TEST_F(DynamicSchemaTest, MapFieldsAreRefusedClearly) {
  EXPECT_EQ(Merge("s: x\nattrs: {a: b}\n"),
            "t.yaml:2:1: field 'attrs': is a protobuf map field, which YAML config "
            "loading does not support");
}

TEST_F(DynamicSchemaTest, OneofMembersConflict) {
  EXPECT_EQ(Merge("by_id: 3\n"), "by_id: 3");
  EXPECT_EQ(Merge("by_name: x\nby_id: 3\n"),
            "t.yaml:2:1: field 'by_id': conflicts with 'by_name' (both are in oneof "
            "'target'); accepted: at most one of by_name, by_id");
}

TEST_F(DynamicSchemaTest, ValidateRulesRecursesAndChecksRequired) {
  std::unique_ptr<Message> rules = New("Rules");
  auto validate = [&]() { return std::string(ValidateRules(*rules, "test").message()); };
  EXPECT_EQ(validate(),
            "test: field 'child': required but not set; accepted: a map with the keys "
            "label, weight");

  ASSERT_TRUE(MergeYamlString("child: {label: x}\n", "t.yaml", rules.get()).ok());
  EXPECT_EQ(
      validate(),
      "test: field 'count': required but not set; accepted: an integer from 0 to 10");

  EXPECT_EQ(MergeYamlString("count: 11\n", "t.yaml", rules.get()).message(),
            "t.yaml:1:8: field 'count': value '11' is out of range; accepted: an integer "
            "from 0 to 10");
  ASSERT_TRUE(MergeYamlString("count: 3\n", "t.yaml", rules.get()).ok());
  EXPECT_EQ(
      validate(),
      "test: field 'tags': required but empty; accepted: a sequence whose items are "
      "each a non-empty string");

  ASSERT_TRUE(
      MergeYamlString("tags: [a]\nchildren: [{label: y}, {}]\n", "t.yaml", rules.get())
          .ok());
  EXPECT_EQ(validate(),
            "test: field 'children[1].label': value '' is empty; accepted: a non-empty "
            "string");

  ASSERT_TRUE(
      MergeYamlString("children: []\nlevels: [0.5]\n", "t.yaml", rules.get()).ok());
  EXPECT_EQ(validate(), "");

  const google::protobuf::Reflection* reflection = rules->GetReflection();
  reflection->AddDouble(rules.get(), rules->GetDescriptor()->FindFieldByName("levels"),
                        3);
  EXPECT_EQ(
      validate(),
      "test: field 'levels[1]': value '3' is out of range; accepted: a number <= 1");
}

}  // namespace
}  // namespace weft
