#include "cli/configuration.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cctype>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace gpulse::cli {
namespace {

constexpr std::string_view kGpuReaders =
    "`devices`, `dmon`, `ps`, `record`, `top`, `exporter`, `agent` (every command that reads GPUs)";
constexpr std::string_view kAgentClients =
    "`group`, `watch`, `stats`, `health`, `policy`, `diag`, `config`, `dmon --since`, `top` without "
    "`--direct`";
constexpr std::string_view kMaskReaders =
    "`devices --visible` (this process's environment or `--env-from PID`'s), `record` (the "
    "environment CMD inherits)";

constexpr std::array kVariables = {
    EnvironmentVariable{"GPULSE_NVML_LIBRARY", kGpuReaders,
                        "The NVML library to load when `--nvml-lib` is not given (default "
                        "`libnvidia-ml.so.1`, found as the dynamic loader finds libraries)."},
    EnvironmentVariable{"GPULSE_SIM_LIBRARY", kGpuReaders,
                        "With `--simulate`: the simulator library to load instead of "
                        "`libgpulse-nvml-sim.so` beside the binary or in `../lib/gpulse/`."},
    EnvironmentVariable{"GPULSE_SIM_CLOCK", "every command with `--simulate` (the simulator library)",
                        "Freezes the simulator's clock at this many seconds (readings then repeat "
                        "exactly); `exporter` and `agent` also run their own clock on it, and "
                        "refuse it without `--simulate`. For tests and documentation."},
    EnvironmentVariable{"GPULSE_SIM_SCENARIO", "the simulator library",
                        "The scenario the simulator serves when a program loads it as its NVML "
                        "directly (gpulse sets it itself from `--simulate`)."},
    EnvironmentVariable{"GPULSE_SIM_CALL_COUNTS", "the simulator library",
                        "A file the simulator counts its NVML calls into (for tests that bound how "
                        "often gpulse reads a device)."},
    EnvironmentVariable{"GPULSE_PROCFS_ROOT", "`ps`, `record`, `top`, `dmon`, `exporter`, `agent`, "
                        "`devices --visible`",
                        "The procfs tree processes are read from when `--procfs-root` is not given "
                        "(default `/proc`; with `--simulate`, none). In a container, the host's "
                        "/proc mounted somewhere (docs/install.md)."},
    EnvironmentVariable{"GPULSE_HOST", kAgentClients,
                        "The agent (or exporter) to ask when `--host` is not given: "
                        "`unix:///PATH`, `http://HOST:PORT` or `https://HOST:PORT` (default: the "
                        "agent's socket, see Files)."},
    EnvironmentVariable{"GPULSE_AGENT_USER", kAgentClients,
                        "With `GPULSE_AGENT_PASSWORD`: basic-auth credentials sent to an agent "
                        "whose web config asks for them."},
    EnvironmentVariable{"GPULSE_AGENT_PASSWORD", kAgentClients,
                        "The password that goes with `GPULSE_AGENT_USER`."},
    EnvironmentVariable{"NODE_NAME", "`exporter`, `agent`",
                        "The Hostname label when `--hostname` is not given (Kubernetes sets it from "
                        "the downward API); else the host name."},
    EnvironmentVariable{"XDG_RUNTIME_DIR", "`agent` and its clients",
                        "Where a non-root agent makes its socket, `$XDG_RUNTIME_DIR/gpulse/"
                        "agent.sock`, when `/run/gpulse` cannot be used."},
    EnvironmentVariable{"SLURM_JOB_ID", "`collect`",
                        "The job id of a collection whose config names none (else `local-TIME`)."},
    EnvironmentVariable{"GPULSE_SRUN", "`collect`",
                        "The `srun` to start remote exporters with (default `srun` on the PATH)."},
    EnvironmentVariable{"GPULSE_COLLECT_IO_URING", "`collect`",
                        "`1` (default) sends scrape requests with io_uring where the kernel allows "
                        "it, `0` with send(2)."},
    EnvironmentVariable{"GPULSE_COLLECT_TEST_FAULT", "`collect`",
                        "Faults to inject into a collection, for tests only (gpulse says so on "
                        "stderr when set)."},
    EnvironmentVariable{"GPULSE_MEASUREMENT_WINDOW_DIR", "`window`",
                        "The windows directory when `--windows-dir` is not given; `collect` sets "
                        "it for the benchmark it starts."},
    EnvironmentVariable{"SRT_MEASUREMENT_WINDOW_DIR", "`window`",
                        "srtctl's name for the windows directory, read when "
                        "`GPULSE_MEASUREMENT_WINDOW_DIR` is unset."},
    EnvironmentVariable{"GPULSE_RESULT_ROOT", "`window`",
                        "The result root when `--result-root` is not given; `collect` sets it to "
                        "its log directory."},
    EnvironmentVariable{"CUDA_VISIBLE_DEVICES", kMaskReaders,
                        "CUDA's device mask: which GPUs (indices, UUIDs, MIG UUIDs) a CUDA program "
                        "sees, in which order (docs/identity.md). HIP also honours it on AMD GPUs."},
    EnvironmentVariable{"CUDA_DEVICE_ORDER", kMaskReaders,
                        "`FASTEST_FIRST` (CUDA's default) or `PCI_BUS_ID`: the order of CUDA's "
                        "ordinals."},
    EnvironmentVariable{"NVIDIA_VISIBLE_DEVICES", kMaskReaders,
                        "The container's GPUs as the NVIDIA container toolkit set them: the scope "
                        "CUDA's mask applies within."},
    EnvironmentVariable{"ROCR_VISIBLE_DEVICES", kMaskReaders,
                        "ROCm's device mask over AMD GPUs (applied before HIP's)."},
    EnvironmentVariable{"HIP_VISIBLE_DEVICES", kMaskReaders, "HIP's device mask over AMD GPUs."},
    EnvironmentVariable{"GPU_DEVICE_ORDINAL", kMaskReaders, "OpenCL's device mask on ROCm."},
    EnvironmentVariable{"ZE_AFFINITY_MASK", kMaskReaders, "Level Zero's device mask over Intel GPUs."},
    EnvironmentVariable{"ONEAPI_DEVICE_SELECTOR", kMaskReaders,
                        "SYCL's device selector over Intel GPUs (applied after `ZE_AFFINITY_MASK`)."},
    EnvironmentVariable{"ZE_FLAT_DEVICE_HIERARCHY", kMaskReaders,
                        "Level Zero's device hierarchy: `COMPOSITE` numbers cards; unset (`FLAT`) "
                        "or `COMBINED` numbers tiles, which gpulse refuses to map on cards with "
                        "several tiles."},
    EnvironmentVariable{"ZE_ENABLE_PCI_ID_DEVICE_ORDER", kMaskReaders,
                        "`1`: Level Zero numbers devices in PCI bus order (else its order is not "
                        "defined, and gpulse refuses to map more than one device)."},
    EnvironmentVariable{"CUDA_LAUNCH_BLOCKING and the other CUDA debugging variables",
                        "`diag` (in the agent's environment)",
                        "Diagnostics' Environment Variables test warns when any is set, as dcgmi "
                        "diag does (`CUDA_INJECTION64_PATH`, `CUDA_PROFILE`, ...: docs/health.md)."},
    EnvironmentVariable{"TERM", "`top`", "Whether the terminal can show the full-screen view."},
    EnvironmentVariable{"NO_COLOR", "`top`", "Set (to anything): no colours."},
    EnvironmentVariable{"COLUMNS", "`top --once`", "The width to print for when not a terminal."},
};

constexpr std::array kFiles = {
    ConfigFile{"/etc/gpulse/default-counters.csv", "`exporter`, `agent` (the packaged units' `-f`)",
               "The counters to export, in dcgm-exporter's CSV format; a conffile of the package. "
               "Without `-f` the built-in set is used (`gpulse exporter --print-counters`)."},
    ConfigFile{"/etc/gpulse/web.yml", "`exporter`, `agent` (`--web-config-file`)",
               "An example TLS and basic-auth configuration in the Prometheus exporter-toolkit "
               "format, installed by the package, used only when named (docs/exporter.md)."},
    ConfigFile{"/var/lib/gpulse", "`agent` (`--state-dir`)",
               "The agent's database: groups, watches, jobs, history."},
    ConfigFile{"/run/gpulse/agent.sock", "`agent` and its clients",
               "The agent's management socket when it runs as root; otherwise "
               "`$XDG_RUNTIME_DIR/gpulse/agent.sock`, else `/tmp/gpulse-UID/agent.sock`. Clients "
               "look in the same places (docs/agent.md)."},
    ConfigFile{"/var/lib/kubelet/pod-resources/kubelet.sock",
               "`exporter -k` (`--pod-resources-kubelet-socket`)",
               "The kubelet's pod-resources socket, for the pod, namespace and container labels."},
    ConfigFile{"/proc", "`ps`, `record`, `top`, `dmon`, `exporter`, `agent`, `devices --visible`",
               "Processes, their owners, cgroups (containers, pods, Slurm jobs) and environments; "
               "another tree with `--procfs-root` or `GPULSE_PROCFS_ROOT`."},
    ConfigFile{"/sys", kGpuReaders,
               "The AMD and Intel backends' sysfs (`--sysfs-root`, `GPULSE_SYSFS_ROOT`)."},
    ConfigFile{"/dev/nvidia*", "`diag` (`agent --dev-root`)",
               "The device nodes diagnostics check for."},
    ConfigFile{"libnvidia-ml.so.1", kGpuReaders,
               "NVIDIA's driver library, loaded at run time (`--nvml-lib`, `GPULSE_NVML_LIBRARY`)."},
    ConfigFile{"libgpulse-nvml-sim.so", kGpuReaders,
               "The NVML simulator `--simulate` loads: beside the binary or in `../lib/gpulse/` "
               "(the package's `/usr/lib/gpulse/`), or `GPULSE_SIM_LIBRARY`."},
};

// A table cell: no line breaks, no bare '|'.
std::string Cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string Code(std::string_view text) { return text.empty() ? "" : "`" + Cell(text) + "`"; }

// "-a,--address" -> "`-a`, `--address`".
std::string Names(const CLI::Option& o) {
  const std::string names = o.get_positional() && o.get_name(false, true).empty()
                                ? o.get_name(true, false)
                                : o.get_name(false, true);
  std::string out, cur;
  for (char c : names + ",") {
    if (c != ',') {
      cur += c;
      continue;
    }
    if (!cur.empty()) out += (out.empty() ? "" : ", ") + Code(cur);
    cur.clear();
  }
  return out;
}

// What a value looks like: CLI11's type name without its default ("INT:INT in [0 - 60000]").
std::string Value(const CLI::Option& o) {
  if (o.get_type_size() == 0) return "";  // a switch
  return Cell(o.get_type_name());
}

std::string Meaning(const CLI::Option& o) {
  std::string text = o.get_description();
  if (o.get_required()) text += " (required)";
  for (const CLI::Option* x : o.get_needs()) text += " Needs " + x->get_name() + ".";
  for (const CLI::Option* x : o.get_excludes()) text += " Excludes " + x->get_name() + ".";
  return Cell(text.empty() ? "(no description)" : text);
}

bool Shown(const CLI::Option* o) { return !o->get_group().empty(); }

void OptionTable(std::string& out, const std::vector<const CLI::Option*>& options) {
  out += "| Flag | Value | Default | Environment | Meaning |\n|---|---|---|---|---|\n";
  for (const CLI::Option* o : options) {
    out += fmt::format("| {} | {} | {} | {} | {} |\n", Names(*o), Value(*o),
                       Code(o->get_default_str()), Code(o->get_envname()), Meaning(*o));
  }
  out += "\n";
}

void Options(std::string& out, const CLI::App& app) {
  std::vector<const CLI::Option*> positionals;
  std::map<std::string, std::vector<const CLI::Option*>> groups;  // "Options" first, by name
  std::vector<std::string> order;
  for (const CLI::Option* o : app.get_options(Shown)) {
    if (o == app.get_help_ptr() || o == app.get_version_ptr()) continue;
    if (o->get_positional()) {
      positionals.push_back(o);
      continue;
    }
    if (!groups.contains(o->get_group())) order.push_back(o->get_group());
    groups[o->get_group()].push_back(o);
  }
  if (!positionals.empty()) {
    out += "Arguments:\n\n| Argument | Value | Default | Environment | Meaning |\n"
           "|---|---|---|---|---|\n";
    for (const CLI::Option* o : positionals) {
      out += fmt::format("| {} | {} | {} | {} | {} |\n", Names(*o), Value(*o),
                         Code(o->get_default_str()), Code(o->get_envname()), Meaning(*o));
    }
    out += "\n";
  }
  for (const std::string& group : order) {
    out += group + ":\n\n";
    OptionTable(out, groups[group]);
  }
  if (positionals.empty() && order.empty()) out += "No flags besides `--help`.\n\n";
}

std::string Anchor(const std::string& command) {
  std::string out;
  for (char c : command) out += c == ' ' ? '-' : c;
  return out;
}

std::vector<const CLI::App*> Children(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App*) { return true; });
}

// "gpulse record [OPTIONS] -- COMMAND...": the positionals after the flags.
std::string Synopsis(const CLI::App& app, const std::string& command, bool has_children) {
  std::string out = command + (has_children ? " SUBCOMMAND" : "") + " [OPTIONS]";
  for (const CLI::Option* o : app.get_options(Shown)) {
    if (!o->get_positional()) continue;
    std::string name;
    for (char c : o->get_name(true, false)) name += static_cast<char>(std::toupper(c));
    if (o->get_expected_max() > 1) name += "...";
    out += o->get_required() ? " " + name : " [" + name + "]";
  }
  return out;
}

void Section(std::string& out, const CLI::App& app, const std::string& command) {
  const std::vector<const CLI::App*> children = Children(app);
  out += "## " + command + "\n\n" + app.get_description() + "\n\n";
  out += "`" + Synopsis(app, command, !children.empty()) + "`\n\n";
  if (!app.get_footer().empty()) out += app.get_footer() + "\n\n";
  Options(out, app);
  if (!children.empty()) {
    out += "Subcommands: ";
    std::string list;
    for (const CLI::App* c : children) {
      const std::string sub = command + " " + c->get_name();
      list += (list.empty() ? "" : ", ") + fmt::format("[{}](#{})", sub, Anchor(sub));
    }
    out += list + ".\n\n";
  }
  for (const CLI::App* c : children) Section(out, *c, command + " " + c->get_name());
}

void Contents(std::string& out, const CLI::App& app, const std::string& command, int depth) {
  for (const CLI::App* c : Children(app)) {
    const std::string sub = command + " " + c->get_name();
    out += fmt::format("{}- [{}](#{}): {}\n", std::string(2 * depth, ' '), sub, Anchor(sub),
                       c->get_description());
    Contents(out, *c, sub, depth + 1);
  }
}

// Every variable a flag is bound to, with the flags: "DCGM_EXPORTER_LISTEN" -> "`exporter -a`".
void BoundVariables(const CLI::App& app, const std::string& command,
                    std::map<std::string, std::vector<std::string>>& out) {
  for (const CLI::Option* o : app.get_options(Shown)) {
    if (o->get_envname().empty()) continue;
    out[o->get_envname()].push_back("`" + command + " " + o->get_name() + "`");
  }
  for (const CLI::App* c : Children(app)) BoundVariables(*c, command + " " + c->get_name(), out);
}

void Environment(std::string& out, const CLI::App& app) {
  out += "## Environment variables\n\n"
         "A flag given on the command line wins over its variable, and the variable over the "
         "default.\n\n"
         "Bound to a flag (the flag's row says what it means):\n\n"
         "| Variable | Flag |\n|---|---|\n";
  std::map<std::string, std::vector<std::string>> bound;
  for (const CLI::App* c : Children(app)) BoundVariables(*c, c->get_name(), bound);
  for (const auto& [name, flags] : bound) {
    std::string list;
    for (const std::string& f : flags) list += (list.empty() ? "" : ", ") + f;
    out += fmt::format("| `{}` | {} |\n", name, list);
  }
  out += "\nRead without a flag of their own:\n\n| Variable | Read by | Meaning |\n|---|---|---|\n";
  for (const EnvironmentVariable& v : kVariables) {
    const bool one_name = v.name.find(' ') == std::string_view::npos;
    out += fmt::format("| {} | {} | {} |\n", one_name ? Code(v.name) : Cell(v.name),
                       Cell(v.read_by), Cell(v.meaning));
  }
  out += "\n";
}

void Files(std::string& out) {
  out += "## Files\n\n"
         "What gpulse reads or makes without a flag naming it, and the paths flags default to. "
         "What gpulse writes when asked (recordings, packages, reports) is described in "
         "docs/formats.md.\n\n"
         "| Path | Used by | Meaning |\n|---|---|---|\n";
  for (const ConfigFile& f : kFiles) {
    out += fmt::format("| `{}` | {} | {} |\n", f.path, Cell(f.used_by), Cell(f.meaning));
  }
  out += "\n";
}

// Whose conventions a subcommand's flags follow, where not gpulse's own: a short flag means what
// it means in the tool the subcommand copies, so dcgmi's and dcgm-exporter's users keep their
// habits. Among the subcommands not listed, one short flag means one thing.
constexpr std::pair<std::string_view, std::string_view> kConventions[] = {
    {"dmon", "dcgmi dmon"},        {"group", "dcgmi group"},
    {"watch", "dcgmi group's verbs"}, {"stats", "dcgmi stats"},
    {"health", "dcgmi health"},    {"policy", "dcgmi policy"},
    {"diag", "dcgmi diag"},        {"config", "dcgmi config"},
    {"exporter", "dcgm-exporter"}, {"agent", "dcgm-exporter (its exporter options)"},
};
// Single flags that follow another tool than their subcommand's.
constexpr std::tuple<std::string_view, std::string_view, std::string_view> kFlagConventions[] = {
    {"dmon", "-o", "nvidia-smi dmon"},
};

struct ShortUse {
  std::string command;  // "window run"
  std::string long_name;
};

void ShortUses(const CLI::App& app, const std::string& command,
               std::map<std::string, std::vector<ShortUse>>& out) {
  for (const CLI::Option* o : app.get_options(Shown)) {
    if (o == app.get_help_ptr() || o->get_positional()) continue;
    for (const std::string& s : o->get_snames()) {
      out["-" + s].push_back({command, o->get_lnames().empty() ? "" : "--" + o->get_lnames()[0]});
    }
  }
  for (const CLI::App* c : Children(app)) ShortUses(*c, command + " " + c->get_name(), out);
}

std::string_view ConventionOf(const std::string& command, const std::string& flag) {
  for (const auto& [sub, f, who] : kFlagConventions)
    if (sub == command && f == flag) return who;
  for (const auto& [sub, who] : kConventions)
    if (command == sub || command.starts_with(std::string(sub) + " ")) return who;
  return "gpulse";
}

void ShortFlags(std::string& out, const CLI::App& app) {
  out += "## Short flags across subcommands\n\n"
         "A short flag means one thing across gpulse's own subcommands. Where a subcommand copies "
         "a tool (dcgmi, dcgm-exporter, nvidia-smi), its short flags mean what they mean there, so "
         "the same letter can differ between subcommands; these are the letters that do:\n\n"
         "| Flag | Subcommand | Means | Convention |\n|---|---|---|---|\n";
  std::map<std::string, std::vector<ShortUse>> uses;
  for (const CLI::App* c : Children(app)) ShortUses(*c, c->get_name(), uses);
  for (const auto& [flag, list] : uses) {
    std::set<std::string> meanings;
    for (const ShortUse& u : list) meanings.insert(u.long_name);
    if (meanings.size() < 2) continue;
    for (const ShortUse& u : list) {
      out += fmt::format("| `{}` | `gpulse {}` | `{}` | {} |\n", flag, u.command, u.long_name,
                         ConventionOf(u.command, flag));
    }
  }
  out += "\n";
}

}  // namespace

std::span<const EnvironmentVariable> EnvironmentVariables() { return kVariables; }
std::span<const ConfigFile> ConfigFiles() { return kFiles; }

std::string RenderConfigurationReference(const CLI::App& app) {
  std::string out =
      "# Configuration reference\n\n"
      "<!-- Generated by `build/bin/gpulse-docgen --configuration` from the CLI's own definitions "
      "(src/cli/configuration.cc); edit those, not this page. -->\n\n"
      "Every flag of every subcommand, every environment variable gpulse reads and every file it "
      "uses without being told, generated from the same definitions as `--help` and the man pages "
      "(`man gpulse-exporter`), so it cannot say what the binary does not do. Every subcommand "
      "also takes `-h`, `--help`; `gpulse --version` prints the version. Exit codes: 0 done, 1 "
      "the command ran and found a problem, 2 bad flags, files or configuration (`record` uses "
      "125 for its own, as env(1) does).\n\n"
      "- [Environment variables](#environment-variables)\n- [Files](#files)\n"
      "- [Short flags across subcommands](#short-flags-across-subcommands)\n";
  Contents(out, app, "gpulse", 0);
  out += "\n";
  Environment(out, app);
  Files(out);
  ShortFlags(out, app);
  for (const CLI::App* c : Children(app)) Section(out, *c, "gpulse " + c->get_name());
  while (out.ends_with("\n\n")) out.pop_back();
  return out;
}

}  // namespace gpulse::cli
