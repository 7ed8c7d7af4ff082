// Visible-device masks (src/identity: cuda_visible.h, rocm_visible.h, runtime_scope.h, visible.h,
// mask_tokens.h) over a hostile environment on a few host shapes (the identity tests' fixtures):
// CUDA_VISIBLE_DEVICES with CUDA_DEVICE_ORDER, in this container and through another container's
// NVIDIA_VISIBLE_DEVICES; ROCR/HIP/CUDA_VISIBLE_DEVICES and GPU_DEVICE_ORDINAL on ROCm agents.
// Every ordinal a mapping gives is a device (and MIG instance) of the host, none twice, and Lookup
// agrees with the list; the token helpers keep their contracts on every value.
//
// Input: byte 0 picks the host shape (low three bits), the rest is "NAME=value" lines.
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "identity/cuda_visible.h"
#include "identity/devices_fixture.h"
#include "identity/environment.h"
#include "identity/mask_tokens.h"
#include "identity/rocm_visible.h"
#include "identity/runtime_scope.h"

using namespace gpulse;
using namespace gpulse::identity;

namespace {

SystemInfo RocmAgents() {
  SystemInfo s;
  const char* ids[] = {"0A1B2C3D4E5F0001", "0A1B2C3D4E5F0002", "1111AAAA2222BBB3",
                       "1111AAAA2222BBB4"};
  for (unsigned i = 0; i < 4; ++i) {
    char bus[32];
    std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x10 + i);
    s.devices.push_back(testing::Gpu(i, "AMD Instinct MI300X", std::string("GPU-") + ids[i], bus));
  }
  s.devices.push_back(
      testing::Gpu(4, "AMD Instinct MI300X", "", "00000000:20:00.0"));  // no unique id
  return s;
}

SystemInfo Host(unsigned pick) {
  switch (pick % 7) {
    case 0:
      return testing::FourA40();
    case 1:
      return testing::LilbeeHost();
    case 2:
      return testing::Mixed();
    case 3:
      return testing::BusOrderDiffers();
    case 4:
      return testing::MigHost();
    case 5:
      return testing::WithSkipped();
    default:
      return RocmAgents();
  }
}

void CheckMapping(const Mapping& m, const SystemInfo& info) {
  std::set<std::tuple<unsigned, unsigned, unsigned, bool>> seen;
  for (const PhysicalDevice& p : m.ordinals) {
    const DeviceInfo* d = nullptr;
    for (const DeviceInfo& x : info.devices)
      if (x.index == p.index) d = &x;
    FUZZ_CHECK(d != nullptr);
    FUZZ_CHECK(p.uuid == d->uuid);
    if (p.mig) {
      bool found = false;
      for (const MigInstance& mi : d->mig_instances)
        found = found || (mi.uuid == p.mig->uuid && mi.gpu_instance_id == p.mig->gpu_instance_id &&
                          mi.compute_instance_id == p.mig->compute_instance_id);
      FUZZ_CHECK(found);
    }
    auto key = std::make_tuple(p.index, p.mig ? p.mig->gpu_instance_id : 0u,
                               p.mig ? p.mig->compute_instance_id : 0u, p.mig.has_value());
    FUZZ_CHECK(seen.insert(key).second);  // no device twice
  }
  for (unsigned i = 0; i <= m.ordinals.size() + 1; ++i) {
    Target t = Lookup(m, i);
    if (i < m.ordinals.size()) {
      FUZZ_CHECK(std::holds_alternative<PhysicalDevice>(t));
      FUZZ_CHECK(std::get<PhysicalDevice>(t).index == m.ordinals[i].index);
    } else {
      FUZZ_CHECK(std::holds_alternative<Refusal>(t));
      FUZZ_CHECK(!std::get<Refusal>(t).reason.empty());
    }
  }
  if (m.refusal) FUZZ_CHECK(!m.refusal->reason.empty());
}

void CheckTokens(std::string_view value, const std::vector<std::string>& uuids) {
  for (std::string_view token : SplitCommas(value)) {
    FUZZ_CHECK(token.find(',') == std::string_view::npos);
    if (auto v = ParseDecimal(token)) {
      FUZZ_CHECK(IsDecimal(token));
      std::string_view digits =
          token.substr(std::min(token.find_first_not_of('0'), token.size() - 1));
      FUZZ_CHECK(std::to_string(*v) == digits);
    }
    PrefixMatches m = MatchPrefix(token, uuids);
    for (std::size_t i : m.exact) FUZZ_CHECK(i < uuids.size() && uuids[i].starts_with(token));
    for (std::size_t i : m.ignoring_case)
      FUZZ_CHECK(i < uuids.size() && ToUpper(uuids[i]).starts_with(ToUpper(token)));
    (void)HasWhitespace(token);
    (void)Quoted(token);
  }
  (void)JoinNames(uuids);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  SystemInfo info = Host(data[0] & 7);
  std::vector<std::string> entries;
  std::string_view rest = fuzz::Text(data + 1, size - 1);
  while (!rest.empty()) {
    std::size_t nl = rest.find('\n');
    entries.emplace_back(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  }
  Environment env = Environment::FromEntries(entries);

  CheckMapping(ResolveCuda(env, info, HostScope(info)), info);
  auto scope = ContainerScope(env, info, "process 1 (container fuzz)");
  if (auto* s = std::get_if<RuntimeScope>(&scope)) {
    for (std::size_t p : s->positions) FUZZ_CHECK(p < info.devices.size());
    CheckMapping(ResolveCuda(env, info, *s), info);
  } else {
    FUZZ_CHECK(!std::get<Refusal>(scope).reason.empty());
  }
  CheckMapping(ResolveRocm(env, info.devices, RocmApi::kHip), info);
  CheckMapping(ResolveRocm(env, info.devices, RocmApi::kOpenCl), info);

  std::vector<std::string> uuids;
  for (const DeviceInfo& d : info.devices) {
    uuids.push_back(d.uuid);
    for (const MigInstance& m : d.mig_instances) uuids.push_back(m.uuid);
  }
  for (const std::string& e : entries)
    CheckTokens(std::string_view(e).substr(e.find('=') + 1), uuids);
  return 0;
}
