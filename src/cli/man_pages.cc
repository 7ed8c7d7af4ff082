#include "cli/man_pages.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <vector>

namespace gpulse::cli {
namespace {

constexpr const char* kDate = "2026";  // pages are dated by version, not by build time

std::vector<const CLI::App*> Children(const CLI::App& app) {
  std::vector<const CLI::App*> out;
  for (const CLI::App* c : app.get_subcommands([](const CLI::App*) { return true; })) out.push_back(c);
  return out;
}

// "-c,--count" -> "\-c, \-\-count"; a positional's name as it is.
std::string OptionNames(const CLI::Option& o) {
  std::string names = o.get_positional() && o.get_name(false, true).empty() ? o.get_name(true, false)
                                                                           : o.get_name(false, true);
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == ',') {
      out += ", ";
    } else if (names[i] == '-') {
      out += "\\-";
    } else {
      out += names[i];
    }
  }
  return out;
}

void Options(std::string& out, const CLI::App& app) {
  std::string section;
  for (const CLI::Option* o : app.get_options([](const CLI::Option*) { return true; })) {
    if (o->get_group().empty()) continue;  // hidden
    const bool positional = o->get_positional();
    const std::string heading = positional ? "ARGUMENTS" : "OPTIONS";
    if (heading != section) {
      out += ".SH " + heading + "\n";
      section = heading;
    }
    out += ".TP\n.B " + OptionNames(*o);
    if (!o->get_type_name().empty()) out += " \\fI" + TroffEscape(o->get_type_name()) + "\\fR";
    out += "\n";
    std::string text = o->get_description();
    if (o->get_required()) text += " (required)";
    out += TroffEscape(text.empty() ? "(no description)" : text) + "\n";
  }
}

std::string Page(const CLI::App& app, const std::string& page, const std::string& command,
                 const std::string& version) {
  std::string upper;
  for (char c : page) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string out = fmt::format(".TH \"{}\" \"1\" \"{}\" \"gpulse {}\" \"gpulse manual\"\n",
                                upper, kDate, TroffEscape(version));
  out += ".SH NAME\n" + page + " \\- " + TroffEscape(app.get_description()) + "\n";
  out += ".SH SYNOPSIS\n.B " + TroffEscape(command) + "\n";
  const std::vector<const CLI::App*> children = Children(app);
  out += children.empty() ? "[\\fIOPTIONS\\fR]\n" : "\\fISUBCOMMAND\\fR [\\fIOPTIONS\\fR]\n";
  if (!app.get_footer().empty()) out += ".SH DESCRIPTION\n" + TroffEscape(app.get_footer()) + "\n";
  Options(out, app);
  if (!children.empty()) {
    out += ".SH SUBCOMMANDS\n";
    for (const CLI::App* c : children) {
      out += ".TP\n.B " + c->get_name() + "\n" + TroffEscape(c->get_description()) + "\n";
    }
  }
  out += ".SH SEE ALSO\n";
  if (page == "gpulse") {
    std::string refs;
    for (const CLI::App* c : children) {
      if (!refs.empty()) refs += ",\n";
      refs += ".BR gpulse\\-" + c->get_name() + " (1)";
    }
    out += refs + "\n";
  } else {
    out += ".BR gpulse (1)\n";
  }
  out += ".PP\nThe documentation in the source tree: README.md and docs/.\n";
  return out;
}

void Walk(const CLI::App& app, const std::string& page, const std::string& command,
          const std::string& version, std::map<std::string, std::string>& pages) {
  pages[page] = Page(app, page, command, version);
  for (const CLI::App* c : Children(app)) {
    Walk(*c, page + "-" + c->get_name(), command + " " + c->get_name(), version, pages);
  }
}

}  // namespace

std::string TroffEscape(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
    line_start = c == '\n';
  }
  return out;
}

std::map<std::string, std::string> RenderManPages(const CLI::App& app, const std::string& version) {
  std::map<std::string, std::string> pages;
  Walk(app, "gpulse", "gpulse", version, pages);
  return pages;
}

}  // namespace gpulse::cli
