// The flight recorder (comm/src/flight/recorder.h) written by several threads at once, as the
// engine's quick paths and API threads building operations do on one communicator, while another
// thread takes snapshots as a dump does: every record gets its own id, every kind of operation
// numbers its records 1, 2, 3 ... with no gap and no repeat, a group's records are consecutive,
// and a snapshot never shows a torn record.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "flight/recorder.h"

namespace conflux::flight {
namespace {

constexpr int kThreads = 4;
constexpr int kIterations = 6000;
constexpr int kPeers = 3;

// What thread t records at iteration i: kind 0 a collective, 1 a group of a Send and a Recv, 2 a
// single Send. The count says who recorded it and why, so a torn record shows.
size_t countOf(int t, int i, int part) { return static_cast<size_t>(t) * 1000000 + static_cast<size_t>(i) * 10 + part; }
int threadOf(size_t count) { return static_cast<int>(count / 1000000); }
int peerOf(int t, int i) { return (t + i) % kPeers; }

void writer(Recorder& rec, int t) {
  for (int i = 0; i < kIterations; ++i) {
    const int peer = peerOf(t, i);
    switch (i % 3) {
      case 0:
        rec.add(Call{"AllReduce", countOf(t, i, 0), 7, 0, -1});
        break;
      case 1: {
        Recorder::Writing writing(rec);
        const int64_t queued = Recorder::now();
        writing.add(Call{"Send", countOf(t, i, 1), -1, -1, peer, true, false}, queued);
        writing.add(Call{"Recv", countOf(t, i, 2), -1, -1, peer, true, true}, queued);
        break;
      }
      default:
        rec.add(Call{"Send", countOf(t, i, 3), -1, -1, peer, true, false});
    }
  }
}

// A record as a writer made it: the name, the peer and the direction follow from the count.
void expectWhole(const Record& r) {
  const int t = threadOf(r.call.count);
  ASSERT_GE(t, 0);
  ASSERT_LT(t, kThreads);
  const int i = static_cast<int>(r.call.count % 1000000 / 10), part = static_cast<int>(r.call.count % 10);
  ASSERT_GE(r.seq, 1);
  if (part == 0) {
    EXPECT_STREQ(r.call.name, "AllReduce");
    EXPECT_FALSE(r.call.p2p);
    EXPECT_EQ(r.call.datatype, 7);
  } else {
    EXPECT_STREQ(r.call.name, part == 2 ? "Recv" : "Send");
    EXPECT_TRUE(r.call.p2p);
    EXPECT_EQ(r.call.root, peerOf(t, i));
  }
}

TEST(FlightRecorder, WritersOnSeveralThreadsGetDistinctIdsAndGaplessNumbers) {
  Recorder rec(Identity{0, 0, kPeers, "host", 0}, 32768);
  std::atomic<bool> writing{true};
  std::thread reader([&] {
    while (writing.load()) {
      std::vector<Record> seen = rec.snapshot();
      for (size_t k = 0; k < seen.size(); ++k) {
        expectWhole(seen[k]);
        if (k > 0) {
          ASSERT_LT(seen[k - 1].id, seen[k].id);
        }
      }
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) writers.emplace_back(writer, std::ref(rec), t);
  for (auto& w : writers) w.join();
  writing = false;
  reader.join();

  const std::vector<Record> all = rec.snapshot();
  const size_t perThread = kIterations / 3 * 4;  // a collective, a group of two, a Send
  ASSERT_EQ(all.size(), kThreads * perThread);
  // Kind: -1 collectives, else 2 * peer + (recv ? 1 : 0). Every kind's numbers are 1..n.
  std::map<int, std::vector<int64_t>> seqs;
  std::map<size_t, uint64_t> idOfCount;
  for (size_t k = 0; k < all.size(); ++k) {
    expectWhole(all[k]);
    EXPECT_EQ(all[k].id, k + 1);
    const bool recv = std::strcmp(all[k].call.name, "Recv") == 0;
    seqs[all[k].call.p2p ? 2 * all[k].call.root + (recv ? 1 : 0) : -1].push_back(all[k].seq);
    idOfCount[all[k].call.count] = all[k].id;
  }
  for (auto& [kind, numbers] : seqs) {
    std::sort(numbers.begin(), numbers.end());
    for (size_t k = 0; k < numbers.size(); ++k) ASSERT_EQ(numbers[k], static_cast<int64_t>(k + 1)) << "kind " << kind;
  }
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 1; i < kIterations; i += 3) {
      EXPECT_EQ(idOfCount.at(countOf(t, i, 2)), idOfCount.at(countOf(t, i, 1)) + 1) << "thread " << t << ", group " << i;
    }
  }
}

}  // namespace
}  // namespace conflux::flight
