// dev::static_for<N>(f): calls f(std::integral_constant<int, 0>{}) ... f(..., N - 1>{}), so the
// index is a compile-time constant in every copy of the body whatever the unroller decides.
// Use it where a register array is indexed by the loop counter: `#pragma unroll` is a request,
// and past ptxas/NVVM's size thresholds a rolled loop turns the array into local memory (a
// 16-byte load then waits for its data before an STL, so loads meant to be in flight together
// go one DRAM round trip at a time; docs/kernels/quant_fp8_group.md).
#pragma once
#include <type_traits>
#include <utility>

#include "device/prelude.h"

namespace tejas::dev {

template <int N, class F>
__device__ __forceinline__ void static_for(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (f(std::integral_constant<int, I>{}), ...);
  }(std::make_integer_sequence<int, N>{});
}

}  // namespace tejas::dev
