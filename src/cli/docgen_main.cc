// gpulse-docgen: writes the man pages of every gpulse subcommand (cli/man_pages.h) and the bash
// completion (cli/completion.h, as gpulse.bash) into a directory, or prints the configuration
// reference (cli/configuration.h, docs/configuration.md). Run by the build and the tests; not
// installed.
// Usage: gpulse-docgen OUTPUT_DIR | gpulse-docgen --configuration
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "cli/commands.h"
#include "cli/completion.h"
#include "cli/configuration.h"
#include "cli/man_pages.h"
#include "cli/build_info.h"

namespace {

bool Write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (out.flush()) return true;
  std::fprintf(stderr, "gpulse-docgen: cannot write %s\n", path.c_str());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpulse::cli;
  if (argc != 2) {
    std::fprintf(stderr, "usage: gpulse-docgen OUTPUT_DIR | gpulse-docgen --configuration\n");
    return kExitUsage;
  }
  const std::string dir = argv[1];
  CLI::App app("", "gpulse");
  SetUpApp(app);
  if (dir == "--configuration") {
    std::fputs(RenderConfigurationReference(app).c_str(), stdout);
    return std::fflush(stdout) == 0 ? kExitOk : kExitFailure;
  }
  for (const auto& [name, text] : RenderManPages(app, kGpulseVersion)) {
    if (!Write(dir + "/" + name + ".1", text)) return kExitFailure;
  }
  return Write(dir + "/gpulse.bash", RenderBashCompletion(app)) ? kExitOk : kExitFailure;
}
