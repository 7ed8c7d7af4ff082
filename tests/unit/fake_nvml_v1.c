/* A tiny NVML stand-in exporting only the old unversioned names (pre-_v2 drivers), to test the
   loader's fallbacks through a real dlopen. With FAKE_NO_DRIVER, nvmlInit answers
   NVML_ERROR_DRIVER_NOT_LOADED (9). */
#include <string.h>

typedef struct nvmlDevice_st* nvmlDevice_t;
int nvmlInit(void) {
#ifdef FAKE_NO_DRIVER
  return 9;
#else
  return 0;
#endif
}
int nvmlShutdown(void) { return 0; }
const char* nvmlErrorString(int rc) { return rc == 0 ? "Success" : "Error"; }
int nvmlDeviceGetCount(unsigned* n) { *n = 1; return 0; }
int nvmlDeviceGetHandleByIndex(unsigned i, nvmlDevice_t* d) { *d = (nvmlDevice_t)(unsigned long)(i + 1); return 0; }
int nvmlDeviceGetName(nvmlDevice_t d, char* b, unsigned l) { strncpy(b, "Old GPU", l); return 0; }
int nvmlDeviceGetUUID(nvmlDevice_t d, char* b, unsigned l) { strncpy(b, "GPU-11111111-2222-3333-4444-555555555555", l); return 0; }
int nvmlDeviceGetPciInfo(nvmlDevice_t d, void* p) { memset(p, 0, 36); return 0; }
