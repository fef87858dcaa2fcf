// detail::ScopedDryLaunch (runtime/dry_launch.h), which `tejas overhead` times the ops' host path
// with: every op's check case, its tensors marked as device tensors, answers as a real call would
// up to the launch (ok, or unsupported where the cuda backend has no kernel) and reads or writes
// no byte of any tensor; bad arguments are still refused. No GPU needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "check/op_checks.h"
#include "runtime/dry_launch.h"
#include "runtime/validate.h"
#include "support/seed.h"
#include "tejas/norm.h"

using namespace tejas;

namespace {
// Every element's code, per tensor of the case.
struct Snapshot {
  std::vector<std::vector<uint64_t>> bits;
};
Snapshot snapshot(const check::Case& c) {
  Snapshot s;
  for (const auto& arg : c.args()) {
    std::vector<uint64_t> b;
    for (int64_t i = 0; i < arg.host->numel(); ++i) b.push_back(arg.host->bits_flat(i));
    s.bits.push_back(std::move(b));
  }
  return s;
}

const std::set<std::string> kNoCudaKernelYet = {"paged_decode_attention", "merge_attention_states",
                                                "merge_attention_states_n"};

// Every op's check cases, built from the run's seed as tejas check builds them.
std::vector<check::Case> every_case(uint64_t seed) {
  std::vector<check::Case> cases;
  for (const auto& op : check::op_checks()) {
    check::Rng op_rng(check::op_seed(seed, op.name));
    for (check::Case& c : op.build(op_rng)) cases.push_back(std::move(c));
  }
  return cases;
}
}  // namespace

// Debug-check mode reads index tensors from the device, which these views only claim to be on.
#define SKIP_UNDER_DEBUG_CHECKS(ctx)                                                                       \
  if (detail::debug_checks_enabled(ctx))                                                                   \
  GTEST_SKIP() << "TEJAS_DEBUG_CHECKS is set: debug-check mode reads the device-marked host tensors"

TEST(DryLaunch, EveryOpPlansButTouchesNoTensor) {
  TEJAS_SEEDED_TEST_RNG();
  ExecContext ctx;
  ctx.backend = Backend::cuda;
  SKIP_UNDER_DEBUG_CHECKS(ctx);
  [[maybe_unused]] int ran = 0;
  for (const check::Case& c : every_case(seed)) {
    SCOPED_TRACE(c.op() + " " + c.label());
    const Snapshot before = snapshot(c);
    const check::Args a = check::dry_device_args(c);
    Status s;
    {
      const detail::ScopedDryLaunch dry;
      s = c.call()(ctx, a);
    }
#if TEJAS_WITH_CUDA
    if (kNoCudaKernelYet.count(c.op())) {
      EXPECT_EQ(s.code(), StatusCode::unsupported) << s.to_string();
    } else {
      EXPECT_TRUE(s.ok()) << s.to_string();
      ran += !c.empty_batch();  // an empty batch returns before planning
    }
#else
    EXPECT_EQ(s.code(), StatusCode::unsupported) << s.to_string();  // no cuda backend in this build
#endif
    const Snapshot after = snapshot(c);
    EXPECT_EQ(before.bits, after.bits) << "a dry call changed a tensor";
    for (const auto& arg : c.args()) {
      EXPECT_TRUE(arg.host->guards_intact()) << arg.name;
      EXPECT_TRUE(arg.host->padding_intact()) << arg.name;
    }
  }
#if TEJAS_WITH_CUDA
  EXPECT_GT(ran, 40) << "fewer dry calls with tokens succeeded than the ops' check cases";
#endif
  EXPECT_FALSE(detail::dry_launch()) << "the scope did not restore the flag";
}

TEST(DryLaunch, StillRefusesBadArguments) {
  check::HostTensor x(DType::bf16, {2, 64}), w(DType::bf16, {63}), out(DType::bf16, {2, 64});
  TensorView xv = x.view(), wv = w.view(), ov = out.view();
  xv.device = wv.device = ov.device = Device::cuda;
  ExecContext ctx;
  ctx.backend = Backend::cuda;
  const detail::ScopedDryLaunch dry;
  TEJAS_EXPECT_INVALID(rms_norm(ctx, xv, wv, 1e-6, ov), "weight");
}

// resolve_backend's current-device rule: every op's every case, its tensors all on a device other
// than the calling thread's current one, is refused before anything is planned, read or launched,
// naming its first tensor and both devices; on the current device it answers as before. Without a
// GPU the current device is assumed (ScopedAssumedDevice); with one, it is the real one. The
// dry-launch scope only keeps a refusal that failed to happen from launching. Under
// TEJAS_DEBUG_CHECKS=1 the refusals still run (before any debug-mode read); the calls on the
// current device, which would read, do not.
TEST(DryLaunch, EveryOpRefusesTensorsOfAnotherDevice) {
  TEJAS_SEEDED_TEST_RNG();
  ExecContext ctx;
  ctx.backend = Backend::cuda;
  // Refused before debug-check mode's reads too; the calls on the current device would read.
  const bool debug = detail::debug_checks_enabled(ctx);
  const bool gpu = detail::current_cuda_device() >= 0;
  std::unique_ptr<detail::ScopedAssumedDevice> assumed;
  if (!gpu) assumed = std::make_unique<detail::ScopedAssumedDevice>(0);
  const int current = detail::current_cuda_device();
  ASSERT_GE(current, 0);
  const int other = current + 1;
  const std::string want = "expected a tensor on the current CUDA device (cuda:" + std::to_string(current) +
                           "), got cuda:" + std::to_string(other);
  int refused = 0;
  for (const check::Case& c : every_case(seed)) {
    SCOPED_TRACE(c.op() + " " + c.label());
    const Snapshot before = snapshot(c);
    const std::string& first = c.args().front().name;  // every case's tensors are all present
    const detail::ScopedDryLaunch dry;
    const Status s = c.call()(ctx, check::dry_device_args(c, other));
    EXPECT_EQ(s.code(), StatusCode::invalid_argument) << s.to_string();
    EXPECT_NE(s.message().find(": " + first + ": " + want), std::string::npos) << s.to_string();
    refused += s.code() == StatusCode::invalid_argument;
    // On the current device the same views are not refused for their device.
    if (!debug) {
      const Status here = c.call()(ctx, check::dry_device_args(c));
      EXPECT_EQ(here.message().find("current CUDA device"), std::string::npos) << here.to_string();
    }
    EXPECT_EQ(before.bits, snapshot(c).bits) << "a refused call changed a tensor";
  }
  EXPECT_GT(refused, 40);
}

// The host path from several threads at once (an engine's worker threads): every op's cases, dry,
// from 4 threads together, all answering as from one. With a GPU the occupancy caches and the
// attribute raises are contended (first questions included: the test runs in a process of its
// own); without one, the per-process settings read on first use are.
TEST(DryLaunch, FromManyThreadsAtOnce) {
  TEJAS_SEEDED_TEST_RNG();
  ExecContext ctx;
  ctx.backend = Backend::cuda;
  SKIP_UNDER_DEBUG_CHECKS(ctx);
  const std::vector<check::Case> cases = every_case(seed);
  std::vector<check::Args> args;
  for (const check::Case& c : cases) args.push_back(check::dry_device_args(c));
  // Four threads at once first (so that they, not a warm-up, ask the first questions), several
  // rounds each; then one thread alone, whose answers theirs must equal.
  constexpr int kThreads = 4, kRounds = 5;
  std::vector<std::vector<StatusCode>> first(kThreads, std::vector<StatusCode>(cases.size()));
  std::vector<int> unstable(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      const detail::ScopedDryLaunch dry;  // per thread
      for (int r = 0; r < kRounds; ++r)
        for (size_t i = 0; i < cases.size(); ++i) {
          // Each thread starts at a different case, so that different ops meet.
          const size_t j = (i + static_cast<size_t>(t) * cases.size() / kThreads) % cases.size();
          const StatusCode code = cases[j].call()(ctx, args[j]).code();
          if (r == 0) first[t][j] = code;
          else if (code != first[t][j]) ++unstable[t];
        }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_FALSE(detail::dry_launch()) << "another thread's scope leaked into this one";
  const detail::ScopedDryLaunch dry;
  for (size_t j = 0; j < cases.size(); ++j) {
    const StatusCode alone = cases[j].call()(ctx, args[j]).code();
    for (int t = 0; t < kThreads; ++t)
      EXPECT_EQ(first[t][j], alone) << cases[j].op() << " " << cases[j].label() << ": thread " << t
                                    << " answered otherwise than one thread alone";
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(unstable[t], 0) << "thread " << t << ": answers changed between rounds";
}
