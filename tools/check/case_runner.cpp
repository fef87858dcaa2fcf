#include "check/case_runner.h"

#include <cmath>

#include "check/cuda_mem.h"
#include "ops/common/emu_launch.h"

namespace tejas::check {
namespace {

CaseResult result(const Case& c, Verdict v, std::string detail) {
  return CaseResult{c.op(), c.label(), v, std::move(detail)};
}

// Host copies of every argument: inputs and in-place tensors carry their values, outputs poison.
std::vector<std::unique_ptr<HostTensor>> clone_all(const Case& c) {
  std::vector<std::unique_ptr<HostTensor>> out;
  for (const auto& a : c.args()) out.push_back(clone_tensor(*a.host, a.inner_pad));
  return out;
}

Args host_args(const Case& c, const std::vector<std::unique_ptr<HostTensor>>& t) {
  Args args;
  for (size_t i = 0; i < t.size(); ++i) args.add(c.args()[i].name, t[i]->view());
  return args;
}

bool same_codes(const HostTensor& a, const HostTensor& b) {
  for (int64_t i = 0, n = a.numel(); i < n; ++i)
    if (a.bits_flat(i) != b.bits_flat(i)) return false;
  return true;
}

// Memory-safety checks shared by every backend: guards, padding, inputs unchanged; an empty
// batch also leaves every tensor it may write as it was (the reference included, so the check
// does not rest on the reference's own result).
std::string integrity_problem(const Case& c, const std::vector<std::unique_ptr<HostTensor>>& t) {
  const bool empty = c.empty_batch();
  for (size_t i = 0; i < t.size(); ++i) {
    const auto& a = c.args()[i];
    if (!t[i]->guards_intact()) return a.name + ": bytes outside the tensor were written";
    if (!t[i]->padding_intact()) return a.name + ": padding between rows was written";
    if (a.role == Role::input && !same_codes(*t[i], *a.host)) return a.name + ": an input was modified";
    if (empty && !same_codes(*t[i], *a.host)) return a.name + ": an empty batch changed it";
  }
  return "";
}

// --backend reference: the call succeeded; outputs must be finite (infinities only where the
// case says they are expected, NaN never).
CaseResult judge_reference(const Case& c, const std::vector<std::unique_ptr<HostTensor>>& t) {
  if (auto p = integrity_problem(c, t); !p.empty()) return result(c, Verdict::fail, p);
  int64_t checked = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const auto& a = c.args()[i];
    if (a.role == Role::input) continue;
    for (int64_t k = 0, n = t[i]->numel(); k < n; ++k, ++checked) {
      const double v = t[i]->get_flat(k);
      if (std::isnan(v) || (std::isinf(v) && !a.rule.inf_ok))
        return result(c, Verdict::fail, a.name + ": non-finite value " + std::to_string(v) + " at " +
                                            index_string(t[i]->shape(), k));
    }
  }
  if (c.empty_batch()) return result(c, Verdict::pass, "empty batch: the call succeeded and changed nothing");
  return result(c, Verdict::pass, std::to_string(checked) + " output values finite where expected");
}

CompareResult compare_one(const Rule& rule, const HostTensor& got, const HostTensor& want, const Args& got_args,
                          const Args& want_args) {
  if (rule.tie_codes) {
    return compare_codes(got, want, rule.tie_codes(want_args, got_args, -rule.tie_rel),
                         rule.tie_codes(want_args, got_args, rule.tie_rel));
  }
  return rule.exact ? compare_exact(got, want) : compare(got, want, rule.tol);
}

CaseResult compare_outputs(const Case& c, const std::vector<std::unique_ptr<HostTensor>>& got,
                           const std::vector<std::unique_ptr<HostTensor>>& want) {
  if (auto p = integrity_problem(c, got); !p.empty()) return result(c, Verdict::fail, p);
  const Args got_args = host_args(c, got), want_args = host_args(c, want);
  std::string summary;
  for (size_t i = 0; i < got.size(); ++i) {
    const auto& a = c.args()[i];
    if (a.role == Role::input) continue;
    const CompareResult r = compare_one(a.rule, *got[i], *want[i], got_args, want_args);
    if (!r.ok) return result(c, Verdict::fail, a.name + ": " + r.message);
    summary += (summary.empty() ? "" : "; ") + a.name + ": " + r.message;
  }
  return result(c, Verdict::pass, summary);
}

CaseResult run_on_device(const Case& c, const ExecContext& ctx, bool graph,
                         const std::vector<std::unique_ptr<HostTensor>>& want) {
  const bool pdl = ctx.pdl;
  std::string why;
  if (!cuda_available(&why)) return result(c, Verdict::unsupported, "cuda backend not available: " + why);
  auto got = clone_all(c);
  // RunOptions::pdl: the inputs (and in-out tensors) live in the producer's block, which outlives
  // their mirrors.
  InputProducer producer;
  std::vector<std::unique_ptr<DeviceMirror>> dev;
  std::vector<const HostTensor*> produced;
  std::vector<DeviceMirror*> produced_mirrors;
  Args args;
  for (size_t i = 0; i < got.size(); ++i) {
    dev.push_back(std::make_unique<DeviceMirror>());
    if (pdl && c.args()[i].role != Role::output) {
      produced.push_back(got[i].get());
      produced_mirrors.push_back(dev.back().get());
    } else if (Status s = dev.back()->upload(*got[i]); !s.ok()) {
      return result(c, Verdict::fail, "upload: " + s.to_string());
    }
  }
  if (Status s = producer.upload(produced, produced_mirrors); !s.ok()) {
    return result(c, Verdict::fail, "producer: " + s.to_string());
  }
  for (size_t i = 0; i < got.size(); ++i) args.add(c.args()[i].name, dev[i]->view());
  // RunOptions::pdl: the inputs' producer (one kernel writing every input), then the call.
  const auto produce_then_call = [&](const ExecContext& on) {
    if (pdl) {
      if (Status p = producer.produce(on.stream); !p.ok()) return Status::Internal("producer: " + p.to_string());
    }
    return c.call()(on, args);
  };
  const auto on_stream = [&](void* stream) {
    ExecContext on = ctx;
    on.stream = stream;
    return produce_then_call(on);
  };
  const Status s = graph ? run_under_graph_capture(on_stream) : pdl ? run_on_new_stream(on_stream) : produce_then_call(ctx);
  if (s.code() == StatusCode::unsupported) return result(c, Verdict::unsupported, s.message());
  if (!s.ok()) return result(c, Verdict::fail, (graph ? "under graph capture: " : "") + s.to_string());
  if (Status sync = device_synchronize(); !sync.ok()) return result(c, Verdict::fail, sync.to_string());
  for (size_t i = 0; i < got.size(); ++i) {
    bool intact = false;
    if (Status d = dev[i]->download(*got[i]); !d.ok()) return result(c, Verdict::fail, "download: " + d.to_string());
    if (Status g = dev[i]->guards_intact(&intact); !g.ok()) return result(c, Verdict::fail, g.to_string());
    if (!intact) return result(c, Verdict::fail, c.args()[i].name + ": device bytes outside the tensor were written");
  }
  return compare_outputs(c, got, want);
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::pass: return "pass";
    case Verdict::fail: return "FAIL";
    case Verdict::unsupported: return "unsupported";
  }
  return "?";
}

const TensorView& Args::operator[](std::string_view name) const {
  static const TensorView kAbsent{};
  for (const auto& [n, v] : items_)
    if (n == name) return v;
  return kAbsent;
}

HostTensor& Case::add(const std::string& name, Role role, DType dt, std::vector<int64_t> shape, Rule rule,
                      int64_t inner_pad) {
  args_.push_back(Arg{name, role, rule, inner_pad, std::make_unique<HostTensor>(dt, std::move(shape), inner_pad)});
  return *args_.back().host;
}
bool Case::empty_batch() const {
  for (const auto& a : args_)
    if (a.host->numel() == 0) return true;
  return false;
}
void Case::set_rule(const std::string& name, Rule rule) {
  for (auto& a : args_)
    if (a.name == name) a.rule = std::move(rule);
}
HostTensor& Case::in(const std::string& name, DType dt, std::vector<int64_t> shape, int64_t inner_pad) {
  return add(name, Role::input, dt, std::move(shape), Rule{}, inner_pad);
}
HostTensor& Case::out(const std::string& name, DType dt, std::vector<int64_t> shape, Rule rule, int64_t inner_pad) {
  return add(name, Role::output, dt, std::move(shape), rule, inner_pad);
}
HostTensor& Case::inout(const std::string& name, DType dt, std::vector<int64_t> shape, Rule rule, int64_t inner_pad) {
  return add(name, Role::inout, dt, std::move(shape), rule, inner_pad);
}

std::unique_ptr<HostTensor> clone_tensor(const HostTensor& h, int64_t inner_pad) {
  auto t = std::make_unique<HostTensor>(h.dtype(), h.shape(), inner_pad);
  for (int64_t i = 0, n = h.numel(); i < n; ++i) t->set_bits_flat(i, h.bits_flat(i));
  return t;
}

Args dry_device_args(const Case& c, int device_index) {
  Args a;
  const int device = device_index >= 0 ? device_index : current_device_index();
  for (const auto& arg : c.args()) {
    TensorView v = arg.host->view();
    if (v.defined()) {
      v.device = Device::cuda;
      v.device_index = device;
    }
    a.add(arg.name, v);
  }
  return a;
}

CaseResult run_case(const Case& c, const RunOptions& options) {
  ExecContext ref_ctx;
  ref_ctx.backend = Backend::reference;
  auto want = clone_all(c);
  const Status rs = c.call()(ref_ctx, host_args(c, want));
  if (!rs.ok()) return result(c, Verdict::fail, "reference: " + rs.to_string());
  if (options.backend == Backend::reference) return judge_reference(c, want);
  // The reference held to the same memory rules, so no backend is judged against a broken one.
  if (auto p = integrity_problem(c, want); !p.empty()) return result(c, Verdict::fail, "reference: " + p);

  ExecContext ctx;
  ctx.backend = options.backend;
  ctx.emulated_arch = options.emulated_arch;
  ctx.pdl = options.pdl && options.backend == Backend::cuda;
  if (options.backend == Backend::cuda) return run_on_device(c, ctx, options.cuda_graph, want);

  auto got = clone_all(c);
  detail::begin_emulator_call();  // the reports below are this call's (an empty batch makes none)
  const Status s = c.call()(ctx, host_args(c, got));
  if (s.code() == StatusCode::unsupported) return result(c, Verdict::unsupported, s.message());
  if (!s.ok()) return result(c, Verdict::fail, s.to_string());
  if (const size_t n = detail::last_emulator_reports().size(); n > 0 && c.empty_batch())
    return result(c, Verdict::fail, "an empty batch launched " + std::to_string(n) + " kernel(s)");
  return compare_outputs(c, got, want);
}

}  // namespace tejas::check
