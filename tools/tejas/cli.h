// The `tejas` command line as a library call, so tests run it in-process:
//   tejas check | bench | roofline | info   (tejas --help for the list)
// Results go to `out`, progress lines and errors to `err`. Returns the exit status:
// 0 ok, 1 a check failed or the run hit an error, 2 bad flags.
#pragma once
#include <ostream>
#include <string>
#include <vector>

namespace tejas::cli {

int main(int argc, char** argv, std::ostream& out, std::ostream& err);
// args excludes the program name: {"check", "--backend", "emulator"}.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tejas::cli
