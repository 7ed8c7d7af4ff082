#include "core/xid_catalogue.h"

#include <algorithm>
#include <array>

namespace gpulse {
namespace {

// NVIDIA's Xid-Catalog.xlsx, sheet "Xids" (codes 1-172), verbatim but for line breaks inside a
// cell, which are single spaces here; then the codes of nverror.h that the catalogue predates.
// clang-format off
constexpr auto kCatalogue = std::to_array<XidEntry>({
    {1, "ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {2, "ROBUST_CHANNEL_FIFO_ERROR_SW_METHOD", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {3, "ROBUST_CHANNEL_FIFO_ERROR_UNK_METHOD", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {4, "ROBUST_CHANNEL_FIFO_ERROR_CHANNEL_BUSY", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {5, "ROBUST_CHANNEL_FIFO_ERROR_RUNOUT_OVERFLOW", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {6, "ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {7, "ROBUST_CHANNEL_FIFO_ERROR_PTE_ERR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {9, "ROBUST_CHANNEL_GR_ERROR_INSTANCE", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {10, "ROBUST_CHANNEL_GR_ERROR_SINGLE_STEP", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {11, "ROBUST_CHANNEL_GR_ERROR_MISSING_HW", "Invalid or corrupted push buffer stream", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CHECK_APP/CUDA", XidSource::kCatalogueAndArchive},
    {12, "ROBUST_CHANNEL_GR_ERROR_SW_METHOD", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {13, "ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY", "Graphics Engine Exception", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "WORKFLOW_XID_13", XidSource::kCatalogueAndArchive},
    {14, "ROBUST_CHANNEL_FAKE_ERROR", "Unused", "A100=YES;H100=YES;B100=YES;GB200=YES", "IGNORE", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {15, "ROBUST_CHANNEL_SCANLINE_TIMEOUT", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {16, "ROBUST_CHANNEL_VBLANK_CALLBACK_TIMEOUT", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {17, "ROBUST_CHANNEL_PARAMETER_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {18, "ROBUST_CHANNEL_BUS_MASTER_TIMEOUT_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {19, "ROBUST_CHANNEL_DISP_MISSED_NOTIFIER", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {20, "ROBUST_CHANNEL_MPEG_ERROR_SW_METHOD", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {21, "ROBUST_CHANNEL_ME_ERROR_SW_METHOD", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {22, "ROBUST_CHANNEL_VP_ERROR_SW_METHOD", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {23, "ROBUST_CHANNEL_RC_LOGGING_ENABLED", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {24, "ROBUST_CHANNEL_GR_SEMAPHORE_TIMEOUT", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {25, "ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", "Invalid or illegal push buffer stream", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CHECK_APP/CUDA", XidSource::kCatalogueAndArchive},
    {26, "ROBUST_CHANNEL_FIFO_ERROR_FBISTATE_TIMEOUT", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {27, "ROBUST_CHANNEL_VP_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {28, "ROBUST_CHANNEL_VP2_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {29, "ROBUST_CHANNEL_BSP_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {30, "ROBUST_CHANNEL_BAD_ADDR_ACCESS", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "WORKFLOW_XID_31", XidSource::kCatalogueAndArchive},
    {32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CHECK_APP/CUDA", XidSource::kCatalogueAndArchive},
    {33, "ROBUST_CHANNEL_SEC_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {34, "ROBUST_CHANNEL_MSVLD_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {35, "ROBUST_CHANNEL_MSPDEC_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {36, "ROBUST_CHANNEL_MSPPP_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {37, "ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD", "Driver firmware error", "A100=YES;H100=YES;B100=YES;GB200=YES", "IGNORE", "CHECK_APP/CUDA", XidSource::kCatalogueAndArchive},
    {38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error", "A100=YES;H100=YES;B100=YES;GB200=YES", "IGNORE", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {39, "ROBUST_CHANNEL_CE0_ERROR", "Copy Engine Exception", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {40, "ROBUST_CHANNEL_CE1_ERROR", "Copy Engine Exception", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {41, "ROBUST_CHANNEL_CE2_ERROR", "Copy Engine Exception", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {42, "ROBUST_CHANNEL_VIC_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing", "A100=YES;H100=YES;B100=YES;GB200=YES", "IGNORE", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {44, "ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", "Graphics Engine fault during context switch", "A100=YES;H100=YES;B100=YES;GB200=YES", "IGNORE", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda applications and hitting a DBE", "A100=YES;H100=YES;B100=YES;GB200=YES", "WORKFLOW_XID_45", "Solo: RESTART_FM Not Solo: IGNORE (follow other Xid)", XidSource::kCatalogueAndArchive},
    {46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESET_GPU", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {47, "ROBUST_CHANNEL_NVENC0_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "WORKFLOW_XID_48", "WORKFLOW_XID_48", XidSource::kCatalogueAndArchive},
    {49, "SILENT_RUNNING_CONSTANT_LEVEL_SET_BY_REGISTRY", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {50, "SILENT_RUNNING_LEVEL_TRANSITION_DUE_TO_RC_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {51, "SILENT_RUNNING_STRESS_TEST_FAILURE", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {52, "SILENT_RUNNING_LEVEL_TRANS_DUE_TO_TEMP_RISE", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {53, "SILENT_RUNNING_TEMP_REDUCED_CLOCKING", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING", "Auxiliary power is not connected to the GPU board", "A100=YES;H100=YES;B100=YES;GB200=NO", "CHECK_MECHANICALS", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {55, "SILENT_RUNNING_TEMPERATURE_READ_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {56, "DISPLAY_CHANNEL_EXCEPTION", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {57, "FB_LINK_TRAINING_FAILURE_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {58, "FB_MEMORY_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {59, "PMU_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {60, "ROBUST_CHANNEL_SEC2_ERROR", "Video processor exception", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "INVESTIGATE_SW", XidSource::kCatalogueAndArchive},
    {61, "PMU_BREAKPOINT", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {62, "PMU_HALT_ERROR", "Internal micro-controller halt (newer drivers)", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESET_GPU", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {63, "INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory remapping event", "A100=YES;H100=YES;B100=YES;GB200=YES", "IGNORE", "IGNORE", XidSource::kCatalogueAndArchive},
    {64, "INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory remapping failure", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESET_GPU", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {65, "ROBUST_CHANNEL_NVENC1_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {66, "ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION", "Illegal access by driver", "A100=YES;H100=YES;B100=YES;GB200=YES", "IGNORE", "INVESTIGATE_SW", XidSource::kCatalogueAndArchive},
    {67, "ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION", "Illegal access by driver", "A100=YES;H100=YES;B100=YES;GB200=YES", "IGNORE", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {68, "ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 Exception", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics Engine class error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CHECK_APP/CUDA", XidSource::kCatalogueAndArchive},
    {70, "ROBUST_CHANNEL_CE3_ERROR", "CE3: Unknown Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {71, "ROBUST_CHANNEL_CE4_ERROR", "CE4: Unknown Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {72, "ROBUST_CHANNEL_CE5_ERROR", "CE5: Unknown Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {73, "ROBUST_CHANNEL_NVENC2_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {74, "NVLINK_ERROR", "NVLINK Error", "A100=YES;H100=YES;B100=NO;GB200=NO", "WORKFLOW_NVLINK_ERR", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {75, "ROBUST_CHANNEL_CE6_ERROR", "CE6: Unknown Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {76, "ROBUST_CHANNEL_CE7_ERROR", "CE7: Unknown Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {77, "ROBUST_CHANNEL_CE8_ERROR", "CE8: Unknown Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {78, "VGPU_START_ERROR", "vGPU Start Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "UPDATE_SWFW", "UPDATE_SWFW", XidSource::kCatalogueAndArchive},
    {79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_BM", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", "Corrupted data sent to GPU", "A100=YES;H100=YES;B100=NO;GB200=NO", "RESTART_APP", "CHECK_APP/CUDA", XidSource::kCatalogueAndArchive},
    {81, "ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {82, "ROBUST_CHANNEL_NVJPG0_ERROR", "NVJPG0 Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {83, "ROBUST_CHANNEL_NVDEC1_ERROR", "NVDEC1 Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {84, "ROBUST_CHANNEL_NVDEC2_ERROR", "NVDEC2 Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {85, "ROBUST_CHANNEL_CE9_ERROR", "CE9: Unknown Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {86, "ROBUST_CHANNEL_OFA0_ERROR", "OFA Exception", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {87, "NVTELEMETRY_DRIVER_REPORT", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {88, "ROBUST_CHANNEL_NVDEC3_ERROR", "NVDEC3 Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {89, "ROBUST_CHANNEL_NVDEC4_ERROR", "NVDEC4 Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {90, "LTC_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {91, "RESERVED_XID", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", "A100=YES;H100=YES;B100=YES;GB200=YES", "IGNORE", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {93, "INFOROM_ERASE_LIMIT_EXCEEDED", "Non-fatal violation of provisioned InfoROM wear limit", "A100=YES;H100=NO;B100=NO;GB200=NO", "IGNORE", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "IGNORE (sympathetic)", XidSource::kCatalogueAndArchive},
    {95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESET_GPU", "IGNORE (sympathetic)", XidSource::kCatalogueAndArchive},
    {96, "ROBUST_CHANNEL_NVDEC5_ERROR", "NVDEC5 Error", "A100=NO;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {97, "ROBUST_CHANNEL_NVDEC6_ERROR", "NVDEC6 Error", "A100=NO;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {98, "ROBUST_CHANNEL_NVDEC7_ERROR", "NVDEC7 Error", "A100=NO;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {99, "ROBUST_CHANNEL_NVJPG1_ERROR", "NVJPG1 Error", "A100=NO;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {100, "ROBUST_CHANNEL_NVJPG2_ERROR", "NVJPG2 Error", "A100=NO;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {101, "ROBUST_CHANNEL_NVJPG3_ERROR", "NVJPG3 Error", "A100=NO;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {102, "ROBUST_CHANNEL_NVJPG4_ERROR", "NVJPG4 Error", "A100=NO;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {103, "ROBUST_CHANNEL_NVJPG5_ERROR", "NVJPG5 Error", "A100=NO;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {104, "ROBUST_CHANNEL_NVJPG6_ERROR", "NVJPG6 Error", "A100=NO;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {105, "ROBUST_CHANNEL_NVJPG7_ERROR", "NVJPG7 Error", "A100=NO;H100=YES;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {106, "SMBPBI_TEST_MESSAGE", "SMBPBI Test Message", "A100=YES;H100=YES;B100=YES;GB200=YES", "IGNORE", "IGNORE", XidSource::kCatalogueAndArchive},
    {107, "SMBPBI_TEST_MESSAGE_SILENT", "SMBPBI Test Message Silent", "A100=YES;H100=YES;B100=YES;GB200=YES", "IGNORE", "IGNORE", XidSource::kCatalogueAndArchive},
    {108, "NVLINK_REMOTE_TRANSLATION_ERROR", "Unused", "A100=YES;H100=YES;B100=YES;GB200=YES", "IGNORE", "XID_137_FLOW", XidSource::kCatalogueAndArchive},
    {109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context Switch Timeout Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESET_GPU", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {110, "SEC_FAULT_ERROR", "Security Fault Error", "A100=NO;H100=YES;B100=YES;GB200=YES", "RESET_GPU", "INVESTIGATE_SW", XidSource::kCatalogueAndArchive},
    {111, "BUNDLE_ERROR_EVENT", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {112, "DISP_SUPERVISOR_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {113, "DP_LT_FAILURE", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {114, "HEAD_RG_UNDERFLOW", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {115, "CORE_CHANNEL_REGS", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {116, "WINDOW_CHANNEL_REGS", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {117, "CURSOR_CHANNEL_REGS", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {118, "HEAD_REGS", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {119, "GSP_RPC_TIMEOUT", "GSP RPC Timeout", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESET_GPU", "INVESTIGATE_SW", XidSource::kCatalogueAndArchive},
    {120, "GSP_ERROR", "GSP Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESET_GPU", "INVESTIGATE_SW", XidSource::kCatalogueAndArchive},
    {121, "C2C_ERROR", "C2C Error", "A100=NO;H100=NO;B100=NO;GB200=YES", "IGNORE", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {122, "SPI_PMU_RPC_READ_FAIL", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {123, "SPI_PMU_RPC_WRITE_FAIL", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {124, "SPI_PMU_RPC_ERASE_FAIL", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {125, "INFOROM_FS_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {126, "ROBUST_CHANNEL_CE10_ERROR", "CE10: Unknown Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {127, "ROBUST_CHANNEL_CE11_ERROR", "CE11: Unknown Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {128, "ROBUST_CHANNEL_CE12_ERROR", "CE12: Unknown Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {129, "ROBUST_CHANNEL_CE13_ERROR", "CE13: Unknown Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {130, "ROBUST_CHANNEL_CE14_ERROR", "CE14: Unknown Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {131, "ROBUST_CHANNEL_CE15_ERROR", "CE15: Unknown Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {132, "ROBUST_CHANNEL_CE16_ERROR", "CE16: Unknown Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {133, "ROBUST_CHANNEL_CE17_ERROR", "CE17: Unknown Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {134, "ROBUST_CHANNEL_CE18_ERROR", "CE18: Unknown Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {135, "ROBUST_CHANNEL_CE19_ERROR", "CE19: Unknown Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {136, "ALI_TRAINING_FAIL", "Link Training Failed", "A100=NO;H100=YES;B100=NO;GB200=NO", "RESET_GPU", "INVESTIGATE_LINK_SI", XidSource::kCatalogueAndArchive},
    {137, "NVLINK_PRIV_ERR", "NVLink Privilege Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "IGNORE", "XID_137_FLOW", XidSource::kCatalogueAndArchive},
    {138, "ROBUST_CHANNEL_DLA_ERROR", "Unused", "A100=NO;H100=NO;B100=NO;GB200=NO", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {139, "ROBUST_CHANNEL_OFA1_ERROR", "OFA1 Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "RESTART_APP", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "ECC Unrecovered Error", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESET_GPU", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {141, "ROBUST_CHANNEL_FAST_PATH_ERROR", "CUDA Fast Path Error", "A100=NO;H100=YES;B100=YES;GB200=YES", "IGNORE", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {142, "ROBUST_CHANNEL_NVENC3_ERROR", "NVENC3 Error", "A100=NO;H100=NO;B100=NO;GB200=YES", "CONTACT_SUPPORT", "", XidSource::kCatalogueAndArchive},
    {143, "GPU_INIT_ERROR", "GPU Initialization Error", "A100=NO;H100=YES;B100=YES;GB200=YES", "RESET_GPU", "CONTACT_SUPPORT", XidSource::kCatalogueAndArchive},
    {144, "NVLINK_SAW_ERROR", "NVLINK: SAW Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", XidSource::kCatalogue},
    {145, "NVLINK_RLW_ERROR", "NVLINK: RLW Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", XidSource::kCatalogue},
    {146, "NVLINK_TLW_ERROR", "NVLINK: TLW Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", XidSource::kCatalogue},
    {147, "NVLINK_TREX_ERROR", "NVLINK: TREX Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", XidSource::kCatalogue},
    {148, "NVLINK_NVLPW_CTRL_ERROR", "NVLINK: NVLPW_CTRL Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", XidSource::kCatalogue},
    {149, "NVLINK_NETIR_ERROR", "NVLINK: NETIR Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", XidSource::kCatalogue},
    {150, "NVLINK_MSE_ERROR", "NVLINK: MSE Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", XidSource::kCatalogue},
    {151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", "Key rotation Error", "A100=NO;H100=YES;B100=YES;GB200=YES", "RESTART_VM", "CONTACT_SUPPORT", XidSource::kCatalogue},
    {152, "ROBUST_CHANNEL_DLA_SMMU_ERROR", "DLA SMMU Error", "A100=NO;H100=NO;B100=NO;GB200=NO", "IGNORE", "CONTACT_SUPPORT", XidSource::kCatalogue},
    {153, "ROBUST_CHANNEL_DLA_TIMEOUT", "DLA timeout Error", "A100=NO;H100=NO;B100=NO;GB200=NO", "IGNORE", "CONTACT_SUPPORT", XidSource::kCatalogue},
    {154, "GPU_RECOVERY_ACTION_CHANGED", "GPU Recovery Action Changed", "A100=YES;H100=YES;B100=YES;GB200=YES", "XID_154", "N/A Informational only regarding another Xid", XidSource::kCatalogue},
    {155, "NVLINK_SW_DEFINED_ERROR", "NVLINK: SW Defined Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "RESET_GPU", "INVESTIGATE_SW_USER", XidSource::kCatalogue},
    {156, "RESOURCE_RETIREMENT_EVENT", "Resource Retirement Event", "A100=NO;H100=YES;B100=YES;GB200=YES", "RESET_GPU", "IGNORE", XidSource::kCatalogue},
    {157, "RESOURCE_RETIREMENT_FAILURE", "Resource Retirement Failure", "A100=NO;H100=YES;B100=YES;GB200=YES", "IGNORE", "CONTACT_SUPPORT", XidSource::kCatalogue},
    {158, "GPU_FATAL_TIMEOUT", "GPU Fatal Timeout", "A100=YES;H100=YES;B100=YES;GB200=YES", "RESET_GPU", "CONTACT_SUPPORT", XidSource::kCatalogue},
    {159, "ROBUST_CHANNEL_CHI_NON_DATA_ERROR", "CHI Non-Data Error", "A100=NO;H100=NO;B100=YES;GB200=YES", "CHECK_UVM", "SYMPATHETIC_REPORT_SOLO", XidSource::kCatalogue},
    {160, "CHANNEL_RETIREMENT_EVENT", "Channel Retirement Event", "A100=NO;H100=NO;B100=YES;GB200=YES", "IGNORE", "INVESTIGATE_SW", XidSource::kCatalogue},
    {161, "CHANNEL_RETIREMENT_FAILURE", "Channel Retirement Failure", "A100=NO;H100=NO;B100=YES;GB200=YES", "IGNORE", "INVESTIGATE_SW", XidSource::kCatalogue},
    {162, "PSHC_REENGAGED", "Power Smoothing HW Circuitry capability reengaged", "A100=NO;H100=NO;B100=YES;GB200=YES", "", "", XidSource::kCatalogue},
    {163, "PSHC_DISENGAGED", "Power Smoothing HW Circuitry capability disengaged", "A100=NO;H100=NO;B100=YES;GB200=YES", "", "", XidSource::kCatalogue},
    {164, "PSHC_LOW_LIFETIME", "Power Smoothing HW Circuitry low lifetime reached", "A100=NO;H100=NO;B100=YES;GB200=YES", "", "", XidSource::kCatalogue},
    {165, "PSHC_ZERO_LIFETIME", "Power Smoothing HW Circuitry lifetime exhausted", "A100=NO;H100=NO;B100=YES;GB200=YES", "", "", XidSource::kCatalogue},
    {166, "NVLINK_SECURE_CRYPTO_ERR", "CC traffic seen prior to link properly being configured for encrypted traffic", "A100=NO;H100=NO;B100=YES;GB200=YES", "", "", XidSource::kCatalogue},
    {167, "PCIE_FATAL_TIMEOUT", "PCIE_FATAL_TIMEOUT", "A100=NO;H100=YES;B100=YES;GB200=YES", "", "", XidSource::kCatalogue},
    {168, "REDUCED_GPU_MEMORY_CAPACITY", "Errors found in WPR (write protected region)", "A100=YES;H100=YES;B100=YES;GB200=YES", "", "", XidSource::kCatalogue},
    {169, "SEC2_HALT_ERROR", "Internal micro-controller halt", "A100=NO;H100=YES;B100=YES;GB200=YES", "", "", XidSource::kCatalogue},
    {170, "NVLINK_SECURE_OTHER", "Interrupt seen in CC mode", "A100=NO;H100=NO;B100=YES;GB200=YES", "", "", XidSource::kCatalogue},
    {171, "UNCORRECTABLE_DRAM_ERROR", "Additional to Xid 48 providing more details on particulars of fault to differentiate DRAM/SRAM", "A100=YES;H100=YES;B100=YES;GB200=YES", "", "", XidSource::kCatalogue},
    {172, "UNCORRECTABLE_SRAM_ERROR", "Additional to Xid 48 providing more details on particulars of fault to differentiate DRAM/SRAM", "A100=YES;H100=YES;B100=YES;GB200=YES", "", "", XidSource::kCatalogue},
    {173, "C2C_FATAL_LINK_FAILURE", "", "", "", "", XidSource::kDriverHeader},
    {174, "ROBUST_CHANNEL_RESETCHANNEL_KILL_PROCESS_SILENT", "", "", "", "", XidSource::kDriverHeader},
    {175, "MEMORY_SUBSYSTEM_ERROR", "", "", "", "", XidSource::kDriverHeader},
    {176, "PCIE_CORRECTABLE_ERROR_FAULT", "", "", "", "", XidSource::kDriverHeader},
});
// clang-format on

// gpulse's order (NVIDIA gives none): by how disruptive the action is and whether a person must
// act. NVIDIA's own wording orders the first ones: RESTART_APP and RESTART_VM say a reset or a
// reboot is not needed, RESET_GPU says a reboot is not.
constexpr auto kActions = std::to_array<ActionInfo>({
    {"IGNORE", 0, "no action", ActionClears::kNever},
    {"RESTART_APP", 1, "restart the application", ActionClears::kProcess},
    {"RESTART_VM", 2, "restart the VM that owns the GPU", ActionClears::kReboot},
    {"WORKFLOW_XID_45", 3, "no other Xid around it: restart the Fabric Manager",
     ActionClears::kReset},
    {"DRAIN_P2P", 4, "the driver asks to drain peer-to-peer traffic", ActionClears::kReset},
    {"CHECK_UVM", 5, "reset the GPU if UVM or vGPU is in use, else nothing",
     ActionClears::kReset},
    {"RESET_GPU", 6, "reset the GPU", ActionClears::kReset},
    {"DRAIN_AND_RESET", 7, "drain peer-to-peer traffic, then reset the GPU",
     ActionClears::kReset},
    {"RECOVER_IMEX_DOMAIN", 8, "the driver asks to recover the IMEX domain",
     ActionClears::kReset},
    {"XID_154", 9, "follow the recovery action the driver reports (Xid 154)",
     ActionClears::kReset},
    {"WORKFLOW_NVLINK_ERR", 10, "decode the NVLink error registers (NVIDIA's workflow)",
     ActionClears::kReset},
    {"WORKFLOW_NVLINK5_ERR", 11, "decode the NVLink5 error (NVIDIA's Xid 144-150 table)",
     ActionClears::kReset},
    {"RESTART_BM", 12, "reboot the node", ActionClears::kReboot},
    {"UPDATE_SWFW", 13, "update the driver and firmware", ActionClears::kReboot},
    {"CHECK_MECHANICALS", 14, "check the GPU's seating and connections", ActionClears::kReboot},
    {"UNKNOWN", 15, "gpulse does not know this Xid's action: look it up", ActionClears::kReboot},
    {"CONTACT_SUPPORT", 16, "contact your support organization", ActionClears::kReboot},
});

constexpr XidCatalogueProvenance kProvenance{
    "Analyzing Xid Errors with the Xid Catalog (NVIDIA GPU Deployment and Management "
    "Documentation)",
    "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html",
    "Xid-Catalog.xlsx",
    "7f70ce9684be0c9d98a367770341ccc1d8bca4465cebe42dab7e23d57df5d5a5",
    "2025-09-30T21:15:53Z",
    "nverror.h of NVIDIA's open GPU kernel modules 595.45.04 (Xids 173-176)",
};

}  // namespace

std::string_view XidSourceKey(XidSource s) {
  switch (s) {
    case XidSource::kCatalogue: return "catalog";
    case XidSource::kCatalogueAndArchive: return "catalog+archive";
    case XidSource::kDriverHeader: return "nverror.h";
  }
  return "catalog";
}

std::span<const XidEntry> XidCatalogue() { return kCatalogue; }

const XidEntry* FindXid(std::uint64_t xid) {
  auto it = std::lower_bound(kCatalogue.begin(), kCatalogue.end(), xid,
                             [](const XidEntry& e, std::uint64_t x) { return e.xid < x; });
  return it != kCatalogue.end() && it->xid == xid ? &*it : nullptr;
}

const XidCatalogueProvenance& XidCatalogueSource() { return kProvenance; }

std::span<const ActionInfo> AllActions() { return kActions; }

const ActionInfo* FindAction(std::string_view name) {
  for (const ActionInfo& a : kActions) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

const ActionInfo& CatalogueAction(std::uint64_t xid) {
  static const ActionInfo& unknown = *FindAction(kActionUnknown);
  const XidEntry* e = FindXid(xid);
  if (e == nullptr || e->immediate_action.empty()) return unknown;
  // Xid 48's workflow: a reset alone; drain and reset with Xid 63 or 64 (the resolver's part).
  if (e->immediate_action == "WORKFLOW_XID_48") return *FindAction("RESET_GPU");
  const ActionInfo* a = FindAction(e->immediate_action);
  return a != nullptr ? *a : unknown;
}

const ActionInfo* DriverRecoveryAction(std::uint64_t value) {
  switch (value) {
    case 0: return nullptr;
    case 1: return FindAction("RESET_GPU");
    case 2: return FindAction("RESTART_BM");
    case 3: return FindAction("DRAIN_P2P");
    case 4: return FindAction("DRAIN_AND_RESET");
    case 5: return FindAction("RECOVER_IMEX_DOMAIN");
    default: return FindAction(kActionUnknown);
  }
}

}  // namespace gpulse
