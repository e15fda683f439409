#include "util/allocator.h"

#include <malloc.h>

#include <cstdlib>
#include <string>

namespace translution {

void keep_freed_memory() {
  if (const char* env = std::getenv("TRANSLUTION_KEEP_FREED_MEMORY"); env && std::string(env) == "0") return;
  mallopt(M_MMAP_MAX, 0);              // large blocks come from the heap, so they can be reused
  mallopt(M_TRIM_THRESHOLD, 1 << 30);  // and are not handed back after every step
}

}  // namespace translution
