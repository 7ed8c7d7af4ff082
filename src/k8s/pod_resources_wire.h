// The kubelet's List answer (v1.ListPodResourcesResponse) read from its protobuf wire bytes
// straight into identity::PodResources, without building the answer's messages: a node's thousands
// of CPU-only pods are then a pod name and namespace each, and their containers' NIC ids, CPU ids
// and topology are stepped over (bench/RESULTS.md, issue 20). Field numbers are those of
// podresources_v1.proto.
//
// Where protobuf's own parser (libprotobuf, the generated ListPodResourcesResponse) accepts the
// bytes, this reader accepts them too and gives what converting that message would give: the last
// value of a singular field given more than once, repeated fields appended, fields of another wire
// type than declared treated as unknown, unknown fields (groups included) skipped. It checks the
// parts it keeps (names, kept resources and their device ids, UTF-8 as proto3 requires) and the
// structure of the rest, not the contents of what it skips. tests/fuzz/pod_resources.cc holds it to
// that against libprotobuf.
//
// Thread-safe: a pure function.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "identity/pod_resources.h"

namespace gpulse::k8s {

// Which resources' devices to keep (nullptr: all); containers left without a device are dropped,
// pods are always kept (their count is exported).
using KeepResource = std::function<bool(std::string_view resource)>;

// kInvalidArgument naming the byte offset and what is wrong when `wire` is not a
// ListPodResourcesResponse.
Result<std::vector<identity::PodResources>> ReadListResponse(std::string_view wire,
                                                             const KeepResource& keep);

}  // namespace gpulse::k8s
