// The frame of every operation's entry point (api_coll.cc, api_vector.cc).
#pragma once

#include "api/checks.h"
#include "api/group.h"
#include "api/handle.h"

namespace conflux::api {

// Checks what every call shares and runs `body` with the communicator, held (one reference) for
// the whole call. Inside a group an argument error also fails the group (NCCL's rule).
template <class F>
cfxResult_t entry(const char* fn, cfxComm_t comm, cfxStream_t stream, F&& body) {
  cfxResult_t r = guarded(fn, comm, [&] {
    CommRef ref(comm);
    checkStream(stream);
    body(*ref);
  });
  if (r != cfxSuccess && inGroup()) groupFail(Outcome{static_cast<Status>(r), cfxGetLastError(comm)});
  return r;
}

}  // namespace conflux::api
