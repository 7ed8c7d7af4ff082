// dcgm-exporter's command line inside `gpulse exporter`: every flag and environment variable of
// dcgm-exporter (research/dcgm.md section 4; its pkg/cmd/app.go) is either honoured with the same
// meaning or refused at start-up with a message naming it, never ignored (ADR 0015). A flag given
// with dcgm-exporter's own default value changes nothing and is accepted. Precedence as there: a
// flag wins over its variable.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpulse::cli {

// How gpulse treats one of dcgm-exporter's options.
enum class DcgmDisposition {
  kGpulseOption,  // gpulse has the option under the same flag; only the variable is added
  kHonoured,      // declared here, applied by ApplyDcgmExporterFlags
  kDefaultOnly,   // accepted at dcgm-exporter's default value, refused otherwise (with `why`)
};

struct DcgmFlagSpec {
  std::string_view name;   // the long flag, without "--"
  std::string_view alias;  // dcgm-exporter's short or alternative name ("" for none)
  std::string_view env;    // its environment variable ("" for none)
  bool is_bool;
  std::string_view default_value;  // dcgm-exporter's default, as it would print it
  DcgmDisposition disposition;
  std::string_view why;  // kDefaultOnly: what gpulse does not do
};

std::span<const DcgmFlagSpec> DcgmExporterFlags();

// What the honoured dcgm-exporter options asked for.
struct DcgmCompat {
  std::optional<std::int64_t> collect_interval_ms;  // -c, DCGM_EXPORTER_INTERVAL
  bool replace_blanks_in_model_name = false;        // --replace-blanks-in-model-name
  std::string devices = "f";                        // -d, DCGM_EXPORTER_DEVICES_STR
  bool use_old_namespace = false;                   // -o, DCGM_EXPORTER_USE_OLD_NAMESPACE
  bool kubernetes = false;                          // -k, DCGM_EXPORTER_KUBERNETES
  std::string kubernetes_gpu_id_type = "uid";       // DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  std::string nvidia_resource_names;  // NVIDIA_RESOURCE_NAMES, comma-separated
  std::string hpc_job_mapping_dir;    // --hpc-job-mapping-dir, DCGM_HPC_JOB_MAPPING_DIR ("": off)
  // Raw values of the kDefaultOnly options, parallel to their CLI11 options.
  std::deque<std::string> raw;
  std::deque<bool> raw_bool;
  std::vector<std::pair<const DcgmFlagSpec*, CLI::Option*>> declared;
};

// Declares dcgm-exporter's options on `app` (the exporter subcommand). The gpulse options that
// already exist under dcgm-exporter's names (-a, -f, -n, --web-config-file) must be declared
// first; they get their variables here.
void AddDcgmExporterFlags(CLI::App& app, DcgmCompat& compat);

// After parsing: InvalidArgument naming the first option set to something gpulse cannot honour.
Status CheckDcgmExporterFlags(const DcgmCompat& compat);

// Go's flag syntax, which dcgm-exporter accepts: a single dash before a long name (`-collectors`,
// `-rbmn`). Rewrites such arguments of the exporter subcommand to `--name` so that CLI11 does not
// read them as a bundle of short flags. `args` excludes argv[0].
void RewriteGoStyleFlags(std::vector<std::string>& args);

}  // namespace gpulse::cli
