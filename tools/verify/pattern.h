// Inputs and expected outputs of one (datatype, op, nranks) case. inputValue() is periodic in the
// element index with period 1020 (the lcm of the generators' periods), so one period is computed
// and tiled: filling and checking 4M-element buffers stays cheap.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "reference.h"

namespace cfxtest {

class Pattern {
 public:
  static constexpr size_t kPeriod = 1020;

  Pattern(cfxDataType_t t, cfxRedOp_t op, int nranks) : t_(t), es_(typeSize(t)), n_(nranks) {
    inputs_.resize(nranks, std::vector<uint8_t>(kPeriod * es_));
    expected_.resize(kPeriod * es_);
    std::vector<int64_t> vals(nranks);
    for (size_t k = 0; k < kPeriod; ++k) {
      for (int r = 0; r < nranks; ++r) {
        vals[r] = inputValue(op, r, nranks, k);
        encode(t, vals[r], inputs_[r].data() + k * es_);
      }
      expectedReduce(t, op, vals.data(), nranks, expected_.data() + k * es_);
    }
  }

  // Writes elements [first, first+count) of rank r's input to dst.
  void fillInput(int r, size_t first, size_t count, void* dst) const { tile(inputs_[r], first, count, dst); }
  void fillExpected(size_t first, size_t count, void* dst) const { tile(expected_, first, count, dst); }
  size_t elemSize() const { return es_; }
  cfxDataType_t type() const { return t_; }

 private:
  void tile(const std::vector<uint8_t>& period, size_t first, size_t count, void* dst) const {
    auto* out = static_cast<uint8_t*>(dst);
    size_t done = 0;
    while (done < count) {
      size_t k = (first + done) % kPeriod;
      size_t n = std::min(kPeriod - k, count - done);
      std::memcpy(out + done * es_, period.data() + k * es_, n * es_);
      done += n;
    }
  }

  cfxDataType_t t_;
  size_t es_;
  int n_;
  std::vector<std::vector<uint8_t>> inputs_;
  std::vector<uint8_t> expected_;
};

}  // namespace cfxtest
