// What `tejas check`, `bench` and `roofline` found, and its three renderings: the terminal
// table, JSON (schema in docs/tools.md, kSchemaVersion) and Markdown.
#pragma once
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "bench/floors.h"
#include "check/case_runner.h"

namespace tejas::cli {

inline constexpr int kSchemaVersion = 1;

struct Row {
  std::string suite, op, model, shape;
  bench::Cost cost;
  double floor_us = 0;
  std::string bound;                   // "memory" or "compute"
  std::optional<double> us;            // measured median; absent when not measured
  std::string baseline;                // "" when none
  std::optional<double> baseline_us;
  std::string status;                  // "measured", "unsupported: ...", "not measured: no GPU", ...
};

struct Report {
  std::string command;       // "bench", "roofline", "check"
  std::string gpu;           // ceilings used: "h200"
  bool gpu_present = false;  // timings come from a GPU in this run
  std::string device_name;   // "" without a GPU
  std::string tune;          // TEJAS_TUNE of the run ("" = defaults)
  std::string l2_flush;      // bench / roofline: what runs before each timed run ("dirty", ...; "" = check)
  bench::GpuCeilings ceilings;
  std::vector<Row> rows;
  // Correctness checks run alongside (check: the run; bench: emulator/cuda validation).
  bool has_checks = false;
  std::string check_backend;
  bool check_graph = false;  // cuda: each call run from a captured CUDA graph (tejas check --graph)
  bool check_pdl = false;    // cuda: programmatic dependent launch after the inputs' producer (--pdl)
  uint64_t seed = 0;
  std::vector<check::CaseResult> checks;
};

// Fills the derived columns of a row from its cost and the ceilings.
Row make_row(const std::string& suite, const std::string& op, const std::string& model, const std::string& shape,
             const bench::Cost& cost, const bench::GpuCeilings& g);

struct CheckCounts {
  int pass = 0, fail = 0, unsupported = 0;
};
CheckCounts count_checks(const std::vector<check::CaseResult>& results);

// "op | shape | us | TFLOP/s | GB/s | floor us | % of floor | baseline | x baseline | note";
// a column that was not measured prints "-".
void print_rows(std::ostream& os, const std::vector<Row>& rows);
void print_checks(std::ostream& os, const std::vector<check::CaseResult>& results);
void print_ceilings(std::ostream& os, const bench::GpuCeilings& g);

std::string to_json(const Report& r);
std::string to_markdown(const Report& r);
// Writes `text` to `path`; false (and a message in *error) on failure.
bool write_file(const std::string& path, const std::string& text, std::string* error);

}  // namespace tejas::cli
