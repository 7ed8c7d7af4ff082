// How glibc's allocator hands freed memory back to the kernel, for servers that allocate and free
// the same large buffers again and again (a response body per scrape).
#pragma once

#include <cstddef>

namespace gpulse::sys {

// By default glibc serves allocations over 128 kB with their own mmap (unmapped again on free) and
// gives the top of the heap back to the kernel as soon as 128 kB of it are free, so a body
// allocated per request lands in freshly faulted, zeroed pages every time: at thousands of
// requests a second the page faults and the copies into cold memory dominate the CPU
// (bench/RESULTS.md, issues 14 and 20). This keeps up to `keep_bytes` of freed heap for reuse and
// serves allocations up to `mmap_from_bytes` from the heap.
void KeepFreedMemory(std::size_t keep_bytes, std::size_t mmap_from_bytes);

// glibc gives each thread that allocates while another holds an arena an arena of its own, up to
// 8 per core, and each keeps what its thread freed (up to keep_bytes above): a server whose helper
// threads (gRPC's, the worker pools') each parse a large answer now and then holds that much per
// thread for good, and its RSS climbs with the number of threads that ever did (bench/RESULTS.md,
// issue 39's soak). This caps the arenas at `arenas`. Call before starting threads.
void LimitArenas(int arenas);

}  // namespace gpulse::sys
