#include "datapath/transport/registration_cache.h"

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "rdma/fake_verbs.h"

namespace weft::datapath {
namespace {

using rdma::FakeDeviceConfig;
using rdma::FakeFabric;
using rdma::FakeVerbs;
using rdma::VerbsContext;
using rdma::VerbsPd;

class RegistrationCacheTest : public ::testing::Test {
 protected:
  RegistrationCacheTest() : verbs_(&fabric_, {FakeDeviceConfig::Roce("mlx5_0", 0x0a000001)}) {
    context_ = std::move(verbs_.OpenDevice("mlx5_0")).value();
    pd_ = std::move(verbs_.AllocPd(context_.get())).value();
  }

  // Page-aligned memory, so page rounding does not merge neighbouring test buffers.
  char* Pages(size_t pages) {
    buffers_.emplace_back(static_cast<char*>(std::aligned_alloc(4096, pages * 4096)), &std::free);
    return buffers_.back().get();
  }

  FakeFabric fabric_;
  FakeVerbs verbs_;
  std::unique_ptr<VerbsContext> context_;
  std::unique_ptr<VerbsPd> pd_;
  std::vector<std::unique_ptr<char, decltype(&std::free)>> buffers_;
};

TEST_F(RegistrationCacheTest, CachedRegistrationIsReused) {
  RegistrationCache cache(verbs_, pd_.get(), {.cache_transient = true});
  char* buffer = Pages(2);
  {
    auto a = cache.Acquire(buffer, 8192);
    ASSERT_TRUE(a.ok()) << a.status();
  }
  auto b = cache.Acquire(buffer + 100, 200);  // inside the first registration
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(verbs_.RegisterMrCalls(), 1u);
  EXPECT_EQ(cache.stats().hits, 1u);
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(verbs_.LiveMrCount(), 1);
}

TEST_F(RegistrationCacheTest, TransientRegistrationsGoAwayAfterUse) {
  RegistrationCache cache(verbs_, pd_.get(), {.cache_transient = false});
  char* buffer = Pages(1);
  {
    auto a = cache.Acquire(buffer, 64);
    ASSERT_TRUE(a.ok());
    // While pinned, a second user shares it.
    auto b = cache.Acquire(buffer, 64);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(verbs_.LiveMrCount(), 1);
  }
  EXPECT_EQ(verbs_.LiveMrCount(), 0);
  auto c = cache.Acquire(buffer, 64);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(verbs_.RegisterMrCalls(), 2u);
}

TEST_F(RegistrationCacheTest, PersistentRegionsCoverTheirInsidesAndRefuseRemovalWhileUsed) {
  RegistrationCache cache(verbs_, pd_.get(), {});
  char* region = Pages(4);
  ASSERT_TRUE(cache.AddPersistent(region, 4 * 4096).ok());
  EXPECT_EQ(cache.AddPersistent(region, 4096).code(), absl::StatusCode::kAlreadyExists);
  {
    auto inside = cache.Acquire(region + 5000, 3000);
    ASSERT_TRUE(inside.ok());
    EXPECT_EQ(verbs_.RegisterMrCalls(), 1u);
    EXPECT_EQ(cache.RemovePersistent(region).code(), absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_TRUE(cache.RemovePersistent(region).ok());
  EXPECT_EQ(verbs_.LiveMrCount(), 0);
  EXPECT_EQ(cache.RemovePersistent(region).code(), absl::StatusCode::kNotFound);
}

TEST_F(RegistrationCacheTest, PromotesACachedRangeToPersistent) {
  RegistrationCache cache(verbs_, pd_.get(), {.cache_transient = true});
  char* region = Pages(1);
  { ASSERT_TRUE(cache.Acquire(region, 4096).ok()); }
  ASSERT_TRUE(cache.AddPersistent(region, 4096).ok());
  EXPECT_EQ(verbs_.RegisterMrCalls(), 1u);
  EXPECT_EQ(cache.stats().cached_bytes, 0u);
  EXPECT_TRUE(cache.RemovePersistent(region).ok());
  EXPECT_EQ(verbs_.LiveMrCount(), 0);
}

TEST_F(RegistrationCacheTest, EvictsLeastRecentlyUsedBeyondTheLimit) {
  RegistrationCache cache(verbs_, pd_.get(),
                          {.cache_transient = true, .max_cached_bytes = 3 * 4096});
  std::vector<char*> buffers;
  for (int i = 0; i < 5; ++i) buffers.push_back(Pages(1));
  for (char* b : buffers) {
    auto h = cache.Acquire(b, 4096);
    ASSERT_TRUE(h.ok());
  }
  EXPECT_EQ(cache.stats().evictions, 2u);
  EXPECT_EQ(cache.stats().cached_bytes, 3u * 4096);
  EXPECT_EQ(verbs_.LiveMrCount(), 3);
  // The newest stayed; the oldest is registered again.
  { ASSERT_TRUE(cache.Acquire(buffers[4], 4096).ok()); }
  EXPECT_EQ(cache.stats().misses, 5u);
  { ASSERT_TRUE(cache.Acquire(buffers[0], 4096).ok()); }
  EXPECT_EQ(cache.stats().misses, 6u);
}

TEST_F(RegistrationCacheTest, PinnedEntriesAreNeverEvicted) {
  RegistrationCache cache(verbs_, pd_.get(), {.cache_transient = true, .max_cached_bytes = 0});
  char* buffer = Pages(1);
  auto pinned = cache.Acquire(buffer, 4096);
  ASSERT_TRUE(pinned.ok());
  auto other = cache.Acquire(Pages(1), 4096);
  ASSERT_TRUE(other.ok());
  other->Release();
  EXPECT_EQ(verbs_.LiveMrCount(), 1);  // `other` evicted at once, `pinned` kept
  EXPECT_NE(pinned->lkey(), 0u);
}

TEST_F(RegistrationCacheTest, RegistrationFailureIsReported) {
  RegistrationCache cache(verbs_, pd_.get(), {});
  verbs_.FailNextCall("ibv_reg_mr", ENOMEM);
  auto h = cache.Acquire(Pages(1), 10);
  EXPECT_EQ(h.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(h.status().message().find("ibv_reg_mr"), absl::string_view::npos);
}

}  // namespace
}  // namespace weft::datapath
