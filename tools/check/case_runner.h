// One correctness case of one op: named tensor arguments (inputs, outputs, in-place tensors),
// a call, and how each output is compared. run_case() runs it on the backend under test and on
// the reference backend with the same inputs and compares; the same code serves `tejas check`
// and the GoogleTest suite's GPU cases.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "check/host_tensor.h"
#include "tejas/context.h"
#include "tejas/status.h"

namespace tejas::check {

enum class Verdict : uint8_t { pass, fail, unsupported };
const char* verdict_name(Verdict v);

struct CaseResult {
  std::string op;      // "rms_norm"
  std::string label;   // "bf16 [5, 200], weight f32"
  Verdict verdict = Verdict::fail;
  std::string detail;  // why it failed / the unsupported message / a comparison summary
};

enum class Role : uint8_t { input, output, inout };

// The tensors as the op sees them on one backend, looked up by argument name.
class Args {
 public:
  void add(std::string name, const TensorView& v) { items_.emplace_back(std::move(name), v); }
  // The named view; an empty (absent) view for a name that was never added.
  const TensorView& operator[](std::string_view name) const;

 private:
  std::vector<std::pair<std::string, TensorView>> items_;
};

// Tie-aware codes: for fp8 / fp4 codes and power-of-two scales of values a kernel computes in
// f32, whose rounding may fall on the other side of a rounding boundary than float64's where the
// value lies next to one. `codes(want, got, r)` returns the code of every element (row-major over
// the output's shape) that the float64 value it is rounded from gives after scaling by (1 + r);
// `want` holds the reference backend's tensors after its call, `got` the backend's under test
// (codes are judged against the scale the backend stored, as the headers define them).
using TieCodes = std::function<std::vector<uint64_t>(const Args& want, const Args& got, double r)>;

// How an output is judged against the reference's output of the same dtype.
struct Rule {
  Tolerance tol;
  bool exact = false;   // bitwise code equality
  bool inf_ok = false;  // --backend reference: infinities are expected here (e.g. lse = -inf)
  // When set: bitwise equality, or the code of the element's value moved by -tie_rel or +tie_rel
  // (compare_codes): one step, and only within tie_rel of a boundary. NaN only against NaN.
  TieCodes tie_codes;
  double tie_rel = 0.0;
};

class Case {
 public:
  using Call = std::function<Status(const ExecContext&, const Args&)>;
  Case(std::string op, std::string label) : op_(std::move(op)), label_(std::move(label)) {}

  // Inputs are filled by the caller through the returned reference; outputs stay poisoned.
  HostTensor& in(const std::string& name, DType dt, std::vector<int64_t> shape, int64_t inner_pad = 0);
  HostTensor& out(const std::string& name, DType dt, std::vector<int64_t> shape, Rule rule, int64_t inner_pad = 0);
  // Read and written in place (rope's q and k, fused_add_rms_norm's residual).
  HostTensor& inout(const std::string& name, DType dt, std::vector<int64_t> shape, Rule rule, int64_t inner_pad = 0);
  void set_call(Call c) { call_ = std::move(c); }
  // Replaces the rule of output `name` (one that depends on the inputs, once they are filled).
  void set_rule(const std::string& name, Rule rule);

  struct Arg {
    std::string name;
    Role role;
    Rule rule;
    int64_t inner_pad;
    std::unique_ptr<HostTensor> host;
  };
  const std::vector<Arg>& args() const { return args_; }
  // Some argument has no elements: the op's empty batch (no tokens, or no requests; op_checks.h).
  // run_case holds it to more than its outputs: every tensor it may write keeps its bytes, the
  // emulator launches nothing, and run_op_check fails it where it answers unsupported but the
  // op's other cases ran.
  bool empty_batch() const;
  const std::string& op() const { return op_; }
  const std::string& label() const { return label_; }
  const Call& call() const { return call_; }

 private:
  HostTensor& add(const std::string& name, Role role, DType dt, std::vector<int64_t> shape, Rule rule,
                  int64_t inner_pad);
  std::string op_, label_;
  std::vector<Arg> args_;
  Call call_;
};

struct RunOptions {
  Backend backend = Backend::emulator;
  int emulated_arch = 90;
  // cuda only: the call captured into a CUDA graph on a new stream and run from it
  // (run_under_graph_capture, check/cuda_mem.h), as a serving engine's decode graphs run it; the
  // outputs are judged as an eager call's. A call that cannot be captured fails its case.
  bool cuda_graph = false;
  // cuda only: the call runs with ExecContext::pdl on a new stream (or the graph's), right after
  // a kernel that produces its inputs: each input's device bytes are poisoned and then copied
  // back, all inputs by one stream_copy kernel on the call's stream (check::InputProducer). The
  // op's first kernel, had it touched any input before its griddepcontrol.wait, could see the
  // poison, and NaN never passes (a later kernel of the op depends on the first: the emulator
  // checks every kernel and tensor exactly).
  bool pdl = false;
};

// Runs the case on options.backend and on the reference (see tools/tejas --help for the
// meaning of each verdict). Never throws; a reference failure is a fail.
CaseResult run_case(const Case& c, const RunOptions& options);

// The case's own tensors as views marked as device tensors (Device::cuda, on device_index, or the
// current device when it is negative), for calls that must not dereference them: a cuda-backend
// call under detail::ScopedDryLaunch (tejas overhead).
Args dry_device_args(const Case& c, int device_index = -1);

// A fresh HostTensor with the same dtype, shape and padding, holding the same element codes.
std::unique_ptr<HostTensor> clone_tensor(const HostTensor& h, int64_t inner_pad);

}  // namespace tejas::check
