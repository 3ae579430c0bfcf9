#include "agent/stable_hash.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace weft::agent {
namespace {

TEST(StableHashTest, KnownValuesDoNotChangeAcrossBuilds) {
  // Pinned: simulated clusters and reconnect jitter depend on these staying put.
  EXPECT_EQ(StableHash(""), MixBits(0xcbf29ce484222325ULL));
  EXPECT_EQ(StableHash("a"), MixBits(0xaf63dc4c8601ec8cULL));  // FNV-1a("a")
}

TEST(StableHashTest, SimilarNamesSpread) {
  std::set<uint64_t> low_bytes;
  for (int i = 0; i < 64; ++i) {
    low_bytes.insert(StableHash("node-" + std::to_string(i)) & 0xff);
  }
  // 64 draws over 256 buckets: a decent mix collides a handful of times at most.
  EXPECT_GT(low_bytes.size(), 45u);
}

TEST(StableHashTest, MixBitsDiffersPerIndex) {
  EXPECT_NE(MixBits(1), MixBits(2));
  EXPECT_NE(MixBits(0), 0u);
}

}  // namespace
}  // namespace weft::agent
