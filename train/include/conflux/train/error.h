// Errors of the training layer. Every failure is a conflux::train::Error carrying the cfxResult_t
// that best describes it (cfxInvalidArgument, cfxInvalidUsage, or the code a Conflux call
// returned) and a message that says what was wrong and, for communication, what Conflux said.
#pragma once

#include <conflux/conflux.h>

#include <stdexcept>
#include <string>

#if defined(__GNUC__)
#define CFX_TRAIN_API __attribute__((visibility("default")))
#else
#define CFX_TRAIN_API
#endif

namespace conflux::train {

class CFX_TRAIN_API Error : public std::runtime_error {
 public:
  Error(cfxResult_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cfxResult_t code() const noexcept { return code_; }

 private:
  cfxResult_t code_;
};

// Throws Error(result, "<what>: <cfxGetLastError(comm)>") unless result is cfxSuccess.
CFX_TRAIN_API void check(cfxResult_t result, const char* what, cfxComm_t comm);

// Bytes per element of a Conflux datatype; throws cfxInvalidArgument for an unknown one.
CFX_TRAIN_API size_t dtypeBytes(cfxDataType_t dtype);

}  // namespace conflux::train
