// gpulse-man: writes the man pages of every gpulse subcommand (cli/man_pages.h) into a directory.
// Run by the build; not installed. Usage: gpulse-man OUTPUT_DIR
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "cli/commands.h"
#include "cli/man_pages.h"
#include "cli/build_info.h"

int main(int argc, char** argv) {
  using namespace gpulse::cli;
  if (argc != 2) {
    std::fprintf(stderr, "usage: gpulse-man OUTPUT_DIR\n");
    return kExitUsage;
  }
  CLI::App app("", "gpulse");
  SetUpApp(app);
  for (const auto& [name, text] : RenderManPages(app, kGpulseVersion)) {
    const std::string path = std::string(argv[1]) + "/" + name + ".1";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) {
      std::fprintf(stderr, "gpulse-man: cannot write %s\n", path.c_str());
      return kExitFailure;
    }
  }
  return kExitOk;
}
