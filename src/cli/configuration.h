// The configuration reference, docs/configuration.md: every flag of every subcommand (from the CLI11
// apps every Setup function builds, as the man pages are), every environment variable gpulse reads and
// every file it reads without being told, in one page. Flags and the variables bound to flags come
// from the CLI definitions; the other variables and the files from the catalogue below, which
// tests/e2e/test_configuration.py checks against every variable the source reads. Written by
// `gpulse-docgen --configuration`.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace CLI {
class App;
}

namespace gpulse::cli {

// A variable gpulse reads that no flag is bound to (those with a flag are listed from the flags).
struct EnvironmentVariable {
  std::string_view name;
  std::string_view read_by;  // "gpulse record", "every command that reads GPUs", ...
  std::string_view meaning;
};

// A file or directory gpulse uses without a flag naming it, or a flag's default path.
struct ConfigFile {
  std::string_view path;
  std::string_view used_by;
  std::string_view meaning;
};

std::span<const EnvironmentVariable> EnvironmentVariables();
std::span<const ConfigFile> ConfigFiles();

// The whole page, Markdown, for `app` (gpulse's top-level app with every subcommand set up).
std::string RenderConfigurationReference(const CLI::App& app);

}  // namespace gpulse::cli
