// detail::RecentCache: the last N answers, found by key, the oldest replaced first.
#include <gtest/gtest.h>

#include <tuple>

#include "runtime/recent_cache.h"

using tejas::detail::RecentCache;

TEST(RecentCache, FindsWhatWasPutAndForgetsTheOldestFirst) {
  RecentCache<int, long, 3> c;
  EXPECT_EQ(c.find(0), nullptr) << "empty: not even the zero-initialized key";
  c.put(10, 100);
  c.put(20, 200);
  ASSERT_NE(c.find(10), nullptr);
  EXPECT_EQ(*c.find(10), 100);
  EXPECT_EQ(*c.find(20), 200);
  EXPECT_EQ(c.find(30), nullptr);
  c.put(30, 300);  // full
  EXPECT_EQ(*c.find(10), 100);
  EXPECT_EQ(*c.find(30), 300);
  c.put(40, 400);  // replaces 10, the oldest
  EXPECT_EQ(c.find(10), nullptr);
  EXPECT_EQ(*c.find(20), 200);
  EXPECT_EQ(*c.find(30), 300);
  EXPECT_EQ(*c.find(40), 400);
  c.put(50, 500);  // then 20
  c.put(60, 600);  // then 30
  EXPECT_EQ(c.find(20), nullptr);
  EXPECT_EQ(c.find(30), nullptr);
  EXPECT_EQ(*c.find(40), 400);
  EXPECT_EQ(*c.find(50), 500);
  EXPECT_EQ(*c.find(60), 600);
}

// Keys that alternate (a decode step's launchers, each asking for its own kernel) all stay
// while there are at most N of them; with a tuple key, as resident_ctas keys its answers.
TEST(RecentCache, AlternatingKeysStayWithinCapacity) {
  using Key = std::tuple<int, const void*, int, unsigned long>;
  RecentCache<Key, long, 4> c;
  int a = 0, b = 0;
  const Key keys[] = {{0, &a, 256, 0}, {0, &a, 128, 0}, {0, &b, 256, 0}, {0, &a, 256, 4096}};
  int misses = 0;
  for (int round = 0; round < 5; ++round)
    for (int i = 0; i < 4; ++i) {
      const long* v = c.find(keys[i]);
      if (v == nullptr) {
        ++misses;
        c.put(keys[i], 1000 + i);
      } else {
        EXPECT_EQ(*v, 1000 + i);
      }
    }
  EXPECT_EQ(misses, 4) << "each key asked once";
}
