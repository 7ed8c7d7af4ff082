#include "cli/completion.h"

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace gpulse::cli {
namespace {

struct Node {
  std::string path;                  // "" for gpulse itself, "window run" for a nested one
  std::vector<std::string> words;    // what may follow: subcommand names, then flags
  std::vector<std::string> children;
};

void Split(const std::string& names, std::vector<std::string>& out) {
  std::string cur;
  for (char c : names + ",") {
    if (c == ',') {
      if (!cur.empty() && cur[0] == '-') out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
}

void Walk(const CLI::App& app, const std::string& path, std::vector<Node>& nodes) {
  Node node{path, {}, {}};
  std::vector<const CLI::App*> subs =
      app.get_subcommands([](const CLI::App*) { return true; });
  for (const CLI::App* s : subs) {
    node.words.push_back(s->get_name());
    node.children.push_back(s->get_name());
  }
  for (const CLI::Option* o : app.get_options([](const CLI::Option*) { return true; })) {
    if (o->get_group().empty() || o->get_positional()) continue;
    Split(o->get_name(false, true), node.words);
  }
  nodes.push_back(node);
  for (const CLI::App* s : subs) {
    Walk(*s, path.empty() ? s->get_name() : path + " " + s->get_name(), nodes);
  }
}

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

}  // namespace

std::string RenderBashCompletion(const CLI::App& app) {
  std::vector<Node> nodes;
  Walk(app, "", nodes);
  std::string out =
      "# bash completion for gpulse, generated from its CLI definitions (src/cli/completion.h).\n"
      "_gpulse() {\n"
      "  local cur=${COMP_WORDS[COMP_CWORD]} path=\"\" i words\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    case \"$path:${COMP_WORDS[i]}\" in\n";
  for (const Node& n : nodes) {
    for (const std::string& c : n.children) {
      const std::string next = n.path.empty() ? c : n.path + " " + c;
      out += "      \"" + n.path + ":" + c + "\") path=\"" + next + "\" ;;\n";
    }
  }
  out += "    esac\n  done\n  case \"$path\" in\n";
  for (const Node& n : nodes) {
    out += "    \"" + n.path + "\") words=\"" + Join(n.words) + "\" ;;\n";
  }
  out +=
      "  esac\n"
      "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
      "}\n"
      "complete -o default -F _gpulse gpulse\n";
  return out;
}

}  // namespace gpulse::cli
