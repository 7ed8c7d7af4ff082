// What an XID error code means, in one phrase: the descriptions of NVIDIA's older "Xid Errors"
// table (docs.nvidia.com/deploy/xid-errors/archive), used for the exporter's err_code / err_msg
// labels as dcgm-exporter has them. NVIDIA's Ampere and later catalogue, with its resolution
// buckets and gpulse's recommended actions, is core/xid_catalogue.h.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpulse {

// NVIDIA's short description of `xid`; "Unknown Error" for a code the table does not list.
std::string_view XidDescription(std::uint64_t xid);

}  // namespace gpulse
