// A doorbell lets a rank sleep until a peer changes shared state it is waiting on. It lives in
// shared memory; the futex is process-shared (not FUTEX_PRIVATE).
//
// Protocol (a Dekker handshake, hence the seq_cst fences):
//   waiter:  token = arm();  re-check the condition;  sleep(token, ms) if still unmet;  disarm();
//   signaller: publish the state change;  ring();   // ring() wakes only an armed waiter
#pragma once

#include <atomic>
#include <cstdint>

namespace conflux::shm {

struct alignas(64) Doorbell {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> armed{0};

  uint32_t arm();
  void disarm();
  // Sleeps until the bell rings or `timeoutMs` passes (spurious wake-ups are allowed).
  void sleep(uint32_t token, int timeoutMs);
  // Wakes the owner if it is armed (cheap when it is not).
  void ring();
  // Wakes the owner unconditionally (abort, poison).
  void ringAlways();
};

static_assert(std::atomic<uint32_t>::is_always_lock_free, "shared-memory atomics must be lock free");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared-memory atomics must be lock free");

}  // namespace conflux::shm
