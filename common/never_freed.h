// Objects that are intentionally never freed (handles that outlive destroy, so a stale handle is
// an error instead of a use-after-free): tells LeakSanitizer not to report them.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define CFX_HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/lsan_interface.h>
#define CFX_HAVE_LSAN 1
#endif
#endif

namespace conflux {

inline void neverFreed(const void* p) {
#ifdef CFX_HAVE_LSAN
  __lsan_ignore_object(p);
#else
  (void)p;
#endif
}

}  // namespace conflux
