/* A minimal CUDA process for tests/gpu/device-check.sh: loads the driver API (libcuda.so.1, part of
   every NVIDIA driver install, so no CUDA toolkit is needed to build or run this), creates a
   context on CUDA device 0 of its own environment (CUDA_VISIBLE_DEVICES applies), allocates some
   memory so NVML lists it with a non-zero footprint, prints "ready <pid>", and sleeps. Usage:
   cuda_hold [SECONDS [MIB]]   (defaults 30 s, 256 MiB). Exit 1 with the CUDA error on failure. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef unsigned long long CUdeviceptr;

int main(int argc, char** argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 30;
  size_t mib = argc > 2 ? (size_t)atoi(argv[2]) : 256;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "cuda_hold: %s\n", dlerror());
    return 1;
  }
  CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(lib, "cuInit");
  CUresult (*get)(CUdevice*, int) = (CUresult(*)(CUdevice*, int))dlsym(lib, "cuDeviceGet");
  CUresult (*create)(CUcontext*, unsigned, CUdevice) =
      (CUresult(*)(CUcontext*, unsigned, CUdevice))dlsym(lib, "cuCtxCreate_v2");
  CUresult (*alloc)(CUdeviceptr*, size_t) =
      (CUresult(*)(CUdeviceptr*, size_t))dlsym(lib, "cuMemAlloc_v2");
  if (!init || !get || !create || !alloc) {
    fprintf(stderr, "cuda_hold: libcuda.so.1 lacks the driver API entry points\n");
    return 1;
  }
  CUdevice dev = 0;
  CUcontext ctx = NULL;
  CUdeviceptr ptr = 0;
  CUresult rc;
  if ((rc = init(0)) != 0 || (rc = get(&dev, 0)) != 0 || (rc = create(&ctx, 0, dev)) != 0 ||
      (rc = alloc(&ptr, mib << 20)) != 0) {
    fprintf(stderr, "cuda_hold: CUDA error %d\n", rc);
    return 1;
  }
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  sleep((unsigned)seconds);
  return 0;
}
