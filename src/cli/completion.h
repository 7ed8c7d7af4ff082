// Bash completion generated from the CLI's own definitions (the CLI11 apps every Setup function
// builds): subcommands, a subcommand's own subcommands and each one's flags, so completion offers
// exactly what the binary takes. Written by gpulse-docgen at build time and installed to
// share/bash-completion/completions/gpulse (cmake/install.cmake).
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace gpulse::cli {

std::string RenderBashCompletion(const CLI::App& app);

}  // namespace gpulse::cli
