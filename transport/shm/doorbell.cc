#include "transport/shm/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace conflux::shm {

namespace {
long futex(std::atomic<uint32_t>* addr, int op, uint32_t val, const timespec* ts) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), op, val, ts, nullptr, 0);
}
}  // namespace

uint32_t Doorbell::arm() {
  uint32_t token = seq.load(std::memory_order_acquire);
  armed.store(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return token;
}

void Doorbell::disarm() { armed.store(0, std::memory_order_relaxed); }

void Doorbell::sleep(uint32_t token, int timeoutMs) {
  timespec ts{timeoutMs / 1000, static_cast<long>(timeoutMs % 1000) * 1000000L};
  futex(&seq, FUTEX_WAIT, token, &ts);  // returns at once if seq != token
}

void Doorbell::ring() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (armed.load(std::memory_order_seq_cst) != 0) ringAlways();
}

void Doorbell::ringAlways() {
  seq.fetch_add(1, std::memory_order_seq_cst);
  futex(&seq, FUTEX_WAKE, INT_MAX, nullptr);
}

}  // namespace conflux::shm
