// The `tejas` executable: everything lives in tejas::cli so tests can run it in-process.
#include <iostream>

#include "cli.h"

int main(int argc, char** argv) { return tejas::cli::main(argc, argv, std::cout, std::cerr); }
