#include "sys/heap.h"

#include <malloc.h>

namespace gpulse::sys {

void KeepFreedMemory(std::size_t keep_bytes, std::size_t mmap_from_bytes) {
  ::mallopt(M_TRIM_THRESHOLD, static_cast<int>(keep_bytes));
  ::mallopt(M_MMAP_THRESHOLD, static_cast<int>(mmap_from_bytes));
}

void LimitArenas(int arenas) { ::mallopt(M_ARENA_MAX, arenas); }

}  // namespace gpulse::sys
