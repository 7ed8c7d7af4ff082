#include "k8s/pod_resources_wire.h"

#include <fmt/format.h>

#include <cstdint>

#include "core/utf8.h"

namespace gpulse::k8s {
namespace {

enum WireType : std::uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLength = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

// Nested messages and groups; libprotobuf's parser stops at 100, so every answer it takes fits.
constexpr int kMaxDepth = 128;

// The first error met, with its offset in the whole answer.
struct Failure {
  const char* base = nullptr;
  std::size_t at = 0;
  const char* what = nullptr;
};

// One message's bytes, read field by field. Every method returns false after recording the error.
class Cursor {
 public:
  Cursor(Failure& failure, std::string_view bytes, int depth)
      : f_(&failure), p_(bytes.data()), end_(bytes.data() + bytes.size()), depth_(depth) {}

  bool More() const { return p_ < end_; }

  // The cursor of a message nested in this one: its bytes are read by Bytes. False (recorded)
  // past the depth limit.
  bool Nested(std::string_view bytes, Cursor& inner) {
    if (depth_ + 1 > kMaxDepth) return Fail("messages nested too deep");
    inner = Cursor(*f_, bytes, depth_ + 1);
    return true;
  }

  // The next field's number and wire type. A tag is at most 5 bytes and its value is kept modulo
  // 2^32, as libprotobuf reads it; field number 0 is an error.
  bool Tag(std::uint32_t& number, std::uint32_t& type) {
    std::uint64_t tag = 0;
    if (!Varint(tag, 5, "a field tag")) return false;
    tag &= 0xFFFFFFFFu;
    number = static_cast<std::uint32_t>(tag >> 3);
    type = static_cast<std::uint32_t>(tag & 7);
    if (number == 0) return Fail("field number 0");
    return true;
  }

  // A length-delimited value (its size at most 5 bytes, as libprotobuf reads it).
  bool Bytes(std::string_view& out) {
    std::uint64_t n = 0;
    if (!Varint(n, 5, "a length")) return false;
    if (n > static_cast<std::uint64_t>(end_ - p_))
      return Fail("a length past the end of its message");
    out = {p_, static_cast<std::size_t>(n)};
    p_ += n;
    return true;
  }

  // A string gpulse keeps: proto3 strings are UTF-8.
  bool Text(std::string_view& out) {
    if (!Bytes(out)) return false;
    if (!IsValidUtf8(out)) {
      p_ = out.data();  // the error names the string's first byte
      return Fail("a string that is not UTF-8");
    }
    return true;
  }

  // Steps over the value of a field of this wire type (a group up to its end-group tag).
  bool Skip(std::uint32_t number, std::uint32_t type) {
    std::uint64_t ignored = 0;
    std::string_view bytes;
    switch (type) {
      case kVarint:
        return Varint(ignored, 10, "a varint");
      case kFixed64:
        return Fixed(8);
      case kFixed32:
        return Fixed(4);
      case kLength:
        return Bytes(bytes);
      case kStartGroup:
        return SkipGroup(number);
      case kEndGroup:
        return Fail("an end-group tag outside a group");
      default:
        return Fail("an unknown wire type");
    }
  }

  bool Fail(const char* what) {
    if (f_->what == nullptr) *f_ = {f_->base, static_cast<std::size_t>(p_ - f_->base), what};
    return false;
  }

 private:
  bool Varint(std::uint64_t& out, int max_bytes, const char* what) {
    out = 0;
    for (int i = 0; i < max_bytes; ++i) {
      if (p_ == end_) return Fail(what);
      auto byte = static_cast<std::uint8_t>(*p_++);
      out |= static_cast<std::uint64_t>(byte & 0x7F) << (7 * i);
      if (byte < 0x80) return true;
    }
    return Fail(what);
  }

  bool Fixed(std::size_t n) {
    if (static_cast<std::size_t>(end_ - p_) < n) return Fail("a fixed-size value past the end");
    p_ += n;
    return true;
  }

  bool SkipGroup(std::uint32_t number) {
    if (depth_ + 1 > kMaxDepth) return Fail("groups nested too deep");
    ++depth_;
    while (true) {
      std::uint32_t inner = 0, type = 0;
      if (!Tag(inner, type)) return false;
      if (type == kEndGroup) {
        if (inner != number) return Fail("an end-group tag of another group");
        --depth_;
        return true;
      }
      if (!Skip(inner, type)) return false;
    }
  }

  Failure* f_;
  const char* p_;
  const char* end_;
  int depth_;
};

// What a message reader did with a length-delimited field.
enum class Step { kRead, kUnknown, kFailed };
Step Did(bool ok) { return ok ? Step::kRead : Step::kFailed; }

// Reads the message under `c` field by field: `on(number)` reads the length-delimited fields it
// knows (every field gpulse keeps is one); any other field is stepped over.
template <typename OnField>
bool ForEachField(Cursor& c, OnField on) {
  std::uint32_t number = 0, type = 0;
  while (c.More()) {
    if (!c.Tag(number, type)) return false;
    Step step = type == kLength ? on(number) : Step::kUnknown;
    if (step == Step::kFailed || (step == Step::kUnknown && !c.Skip(number, type))) return false;
  }
  return true;
}

// A length-delimited field holding a message, read by `read(inner)`.
template <typename Read>
Step Nested(Cursor& c, Read read) {
  std::string_view bytes;
  Cursor inner = c;
  return Did(c.Bytes(bytes) && c.Nested(bytes, inner) && read(inner));
}

// A ContainerDevices message: its resource name is its last, so the ids are read in a second pass
// only when `keep` accepts the resource.
bool ReadDevices(Cursor& c, const KeepResource& keep, identity::ContainerResources& out) {
  std::string_view resource;
  Cursor scan = c;
  bool ok = ForEachField(
      scan, [&](std::uint32_t n) { return n == 1 ? Did(scan.Text(resource)) : Step::kUnknown; });
  if (!ok) return false;
  if (keep && !keep(resource)) return true;
  identity::ContainerDevices devices{std::string(resource), {}};
  ok = ForEachField(c, [&](std::uint32_t n) {
    std::string_view id;
    if (n != 2) return Step::kUnknown;
    if (!c.Text(id)) return Step::kFailed;
    devices.device_ids.emplace_back(id);
    return Step::kRead;
  });
  if (ok) out.devices.push_back(std::move(devices));
  return ok;
}

bool ReadContainer(Cursor& c, const KeepResource& keep, identity::PodResources& pod) {
  std::string_view name;
  identity::ContainerResources container;
  bool ok = ForEachField(c, [&](std::uint32_t n) {
    if (n == 1) return Did(c.Text(name));
    if (n == 2) return Nested(c, [&](Cursor& d) { return ReadDevices(d, keep, container); });
    return Step::kUnknown;
  });
  if (ok && !container.devices.empty()) {
    container.name = name;
    pod.containers.push_back(std::move(container));
  }
  return ok;
}

bool ReadPod(Cursor& c, const KeepResource& keep, std::vector<identity::PodResources>& pods) {
  std::string_view name, ns;
  identity::PodResources pod;
  bool ok = ForEachField(c, [&](std::uint32_t n) {
    if (n == 1) return Did(c.Text(name));
    if (n == 2) return Did(c.Text(ns));
    if (n == 3) return Nested(c, [&](Cursor& k) { return ReadContainer(k, keep, pod); });
    return Step::kUnknown;
  });
  if (!ok) return false;
  pod.name = name;
  pod.ns = ns;
  pods.push_back(std::move(pod));
  return true;
}

}  // namespace

Result<std::vector<identity::PodResources>> ReadListResponse(std::string_view wire,
                                                             const KeepResource& keep) {
  Failure failure{wire.data(), 0, nullptr};
  Cursor c(failure, wire, 0);
  std::vector<identity::PodResources> pods;
  bool ok = ForEachField(c, [&](std::uint32_t n) {
    if (n != 1) return Step::kUnknown;
    return Nested(c, [&](Cursor& p) { return ReadPod(p, keep, pods); });
  });
  if (!ok) {
    return InvalidArgument(fmt::format("not a ListPodResourcesResponse: {} at byte {} of {}",
                                       failure.what, failure.at, wire.size()));
  }
  return pods;
}

}  // namespace gpulse::k8s
