// Man pages generated from the CLI's own definitions (the CLI11 apps every Setup function builds), so
// a page cannot say what the binary does not take: gpulse(1) and gpulse-SUB(1) for each subcommand
// (gpulse-window-run(1) for a subcommand's own subcommands). Written by the gpulse-docgen tool at build
// time and installed to share/man/man1 (cmake/install.cmake).
#pragma once

#include <map>
#include <string>

namespace CLI {
class App;
}

namespace gpulse::cli {

// Page name (without ".1") to troff source, for `app` (gpulse's top-level app with every
// subcommand set up) and every subcommand below it. `version` goes in the footer.
std::map<std::string, std::string> RenderManPages(const CLI::App& app, const std::string& version);

// What troff would otherwise read as a request or an escape, made literal.
std::string TroffEscape(const std::string& text);

}  // namespace gpulse::cli
