#include "outcome.h"

#include <exception>
#include <new>

namespace conflux {

Outcome currentException() {
  try {
    throw;
  } catch (const Error& e) {
    return Outcome{e.status(), e.what()};
  } catch (const std::bad_alloc&) {
    return Outcome{Status::kSystemError, "out of memory"};
  } catch (const std::exception& e) {
    return Outcome{Status::kInternalError, e.what()};
  } catch (...) {
    return Outcome{Status::kInternalError, "unknown exception"};
  }
}

}  // namespace conflux
