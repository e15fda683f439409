#include "util/allocator.h"

#include <malloc.h>

namespace translution {

void keep_freed_memory() {
  mallopt(M_MMAP_MAX, 0);              // large blocks come from the heap, so they can be reused
  mallopt(M_TRIM_THRESHOLD, 1 << 30);  // and are not handed back after every step
}

}  // namespace translution
