// What an XID error code means: the description NVIDIA publishes for it in "Xid Errors" (GPU
// Deployment and Management Documentation, docs.nvidia.com/deploy/xid-errors, the catalog for
// Ampere and later), used for the exporter's err_code / err_msg labels as dcgm-exporter has them.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpulse {

// NVIDIA's short description of `xid`; "Unknown Error" for a code the table does not list.
std::string_view XidDescription(std::uint64_t xid);

}  // namespace gpulse
