// Ring arithmetic (UCC's coll_patterns/ring.h): members 0..m-1 in ring order, each sending to
// the next and receiving from the previous. The buffer is cut into m blocks; in reduce-scatter
// step s (0..m-2) member i sends block rsSend(i,s) and receives block rsRecv(i,s), so after m-1
// steps member i holds the full reduction of block rsOwned(i). All-gather step s sends agSend(i,s)
// and receives agRecv(i,s), starting from the block a member owns.
#pragma once

#include <cstddef>

namespace conflux::patterns {

struct Ring {
  int m;
  int next(int i) const { return (i + 1) % m; }
  int prev(int i) const { return (i + m - 1) % m; }
  int rsSend(int i, int s) const { return ((i - s) % m + m) % m; }
  int rsRecv(int i, int s) const { return ((i - s - 1) % m + 2 * m) % m; }
  int rsOwned(int i) const { return (i + 1) % m; }
  int agSend(int i, int s) const { return ((i + 1 - s) % m + m) % m; }
  int agRecv(int i, int s) const { return ((i - s) % m + m) % m; }
};

// Block b of `count` elements cut into m near-equal blocks: [blockLo, blockLo + blockLen).
inline size_t blockLo(size_t count, int m, int b) { return count * static_cast<size_t>(b) / static_cast<size_t>(m); }
inline size_t blockLen(size_t count, int m, int b) { return blockLo(count, m, b + 1) - blockLo(count, m, b); }

}  // namespace conflux::patterns
