// Pieces of the network layer that need no second host: interface filters (NCCL's syntax), the
// TCP wire checks, the host table, the bootstrap's address exchange encoding and the call tags
// that messages between hosts carry.
#include <gtest/gtest.h>

#include "bootstrap/wire.h"
#include "common/error.h"
#include "hosts.h"
#include "ops/call_tag.h"
#include "transport/net/ifaces.h"
#include "transport/net/tcp_wire.h"

namespace conflux {
namespace {

TEST(IfaceFilter, NcclSyntax) {
  auto f = net::IfaceFilter::parse("eth,ib");
  EXPECT_TRUE(f.matches("eth0"));
  EXPECT_TRUE(f.matches("ib1"));
  EXPECT_FALSE(f.matches("lo"));
  auto ex = net::IfaceFilter::parse("^docker,lo");
  EXPECT_FALSE(ex.matches("docker0"));
  EXPECT_FALSE(ex.matches("lo"));
  EXPECT_TRUE(ex.matches("eth0"));
  auto exact = net::IfaceFilter::parse("=eth0");
  EXPECT_TRUE(exact.matches("eth0"));
  EXPECT_FALSE(exact.matches("eth01"));
  auto notExact = net::IfaceFilter::parse("^=eth0");
  EXPECT_FALSE(notExact.matches("eth0"));
  EXPECT_TRUE(notExact.matches("eth01"));
}

TEST(IfaceFilter, DefaultSkipsLoopbackDockerVeth) {
  std::vector<net::Iface> all = {{"lo", {}, true}, {"docker0", {}, false}, {"veth12", {}, false}, {"cfx0", {}, false}};
  auto picked = net::selectInterfaces(all, net::IfaceFilter{});
  ASSERT_EQ(picked.size(), 1u);
  EXPECT_EQ(picked[0].name, "cfx0");
  // Named explicitly, they are used.
  picked = net::selectInterfaces(all, net::IfaceFilter::parse("veth"));
  ASSERT_EQ(picked.size(), 1u);
  EXPECT_EQ(picked[0].name, "veth12");
  // Nothing but loopback: loopback (one host).
  picked = net::selectInterfaces({{"lo", {}, true}}, net::IfaceFilter{});
  ASSERT_EQ(picked.size(), 1u);
}

TEST(TcpWire, FrameAndHandshakeChecks) {
  using namespace net::tcp;
  FrameHeader h{kFrameMagic, kWireVersion, 0, 100, 0, 7, 0, 100, 0};
  EXPECT_EQ(checkFrame(h), "");
  FrameHeader bad = h;
  bad.magic ^= 1;
  EXPECT_NE(checkFrame(bad), "");
  bad = h;
  bad.offset = 50;  // chunk runs past the message's end
  EXPECT_NE(checkFrame(bad), "");
  bad = h;
  bad.chunkBytes = kMaxChunkBytes + 1;
  bad.totalBytes = kMaxChunkBytes + 1;
  EXPECT_NE(checkFrame(bad), "");
  Handshake hs{kHandshakeMagic, kWireVersion, 0, 42, 1, 3, 0, 3};
  EXPECT_EQ(checkHandshake(hs, 42, 3, 4, 3), "");
  EXPECT_NE(checkHandshake(hs, 43, 3, 4, 3), "");  // another communicator
  EXPECT_NE(checkHandshake(hs, 42, 2, 4, 3), "");  // addressed elsewhere
  EXPECT_NE(checkHandshake(hs, 42, 3, 4, 2), "");  // CFX_NSOCKS differs
  hs.from = 3;
  EXPECT_NE(checkHandshake(hs, 42, 3, 4, 3), "");  // only lower ranks connect
}

TEST(HostMap, GroupsByIdentityInRankOrder) {
  HostMap m = HostMap::build({"b", "a", "b", "c", "a"});
  ASSERT_EQ(m.nhosts(), 3);
  EXPECT_EQ(m.hostOf, (std::vector<int>{0, 1, 0, 2, 1}));
  EXPECT_EQ(m.localRankOf, (std::vector<int>{0, 0, 1, 0, 1}));
  EXPECT_EQ(m.ranksOn[1], (std::vector<int>{1, 4}));
  EXPECT_FALSE(m.uniform());
  EXPECT_TRUE(HostMap::build({"x", "y", "x", "y"}).uniform());
}

// Hosts that share a hostname (network namespaces of one machine, or machines named alike) are
// told apart in messages; a hostname of its own is shown alone.
TEST(HostMap, LabelsTellApartHostsThatShareAHostname) {
  HostMap ns = HostMap::build({"vm/boot1/net:[401]", "vm/boot1/net:[402]", "db/boot2/net:[401]"});
  EXPECT_EQ(ns.label(0), "vm net:[401]");
  EXPECT_EQ(ns.label(1), "vm net:[402]");
  EXPECT_EQ(ns.label(2), "db");
  EXPECT_EQ(ns.describe(1), "rank 1 (host 1 'vm net:[402]')");
  HostMap machines = HostMap::build({"n/0123456789ab/net:[1]", "n/ba9876543210/net:[1]"});
  EXPECT_EQ(machines.label(0), "n boot 01234567");
  EXPECT_EQ(machines.label(1), "n boot ba987654");
  EXPECT_EQ(HostMap::build({"forced-a", "forced-b"}).label(1), "forced-b");
}

TEST(BootstrapExchange, EncodingIsChecked) {
  std::vector<std::string> blobs = {"10.0.0.1:5000", "", std::string(bootstrap::kMaxExchangeBytes, 'x')};
  auto enc = bootstrap::encodeDown(bootstrap::TreeDown{{3, "rank 1 failed"}, blobs});
  bootstrap::TreeDown d = bootstrap::decodeDown(enc, 3);
  EXPECT_EQ(d.blobs, blobs);
  EXPECT_EQ(d.status.status, 3);
  EXPECT_EQ(d.status.message, "rank 1 failed");
  EXPECT_THROW(bootstrap::decodeDown(enc, 2), Error);  // wrong count
  enc.pop_back();
  EXPECT_THROW(bootstrap::decodeDown(enc, 3), Error);  // truncated
  EXPECT_EQ(bootstrap::decodeDown(bootstrap::encodeDown({}), 5).blobs.size(), 0u);  // a barrier's

  bootstrap::TreeUp up{{0, ""}, -1, {{2, "b"}, {0, "a"}}};
  auto u = bootstrap::encodeUp(up);
  bootstrap::TreeUp back = bootstrap::decodeUp(u, 3);
  EXPECT_EQ(back.blobs, up.blobs);
  EXPECT_EQ(back.failedRank, -1);
  EXPECT_THROW(bootstrap::decodeUp(u, 2), Error);  // rank 2 is out of range for 2 ranks
  std::string tooLong(bootstrap::kMaxExchangeBytes + 1, 'x');
  EXPECT_THROW(bootstrap::decodeUp(bootstrap::encodeUp({{0, ""}, -1, {{0, tooLong}}}), 1), Error);
}

// Every field of a call survives packing (the count modulo 2^36), a packed call is never 0 (0
// means "not checked"), and calls that differ in any field pack differently.
TEST(CallTag, PacksEveryField) {
  OpDescriptor d;
  d.coll = 5;
  d.datatype = cfxBfloat16;
  d.op = cfxAvg;
  d.root = 65534;
  d.count = (uint64_t{1} << 36) - 3;
  OpDescriptor back = unpackCall(packCall(d));
  EXPECT_EQ(back, d);
  d.op = -1;
  d.root = -1;
  d.count = 0;
  d.coll = 0;
  d.datatype = 0;
  EXPECT_NE(packCall(d), 0u);
  EXPECT_EQ(unpackCall(packCall(d)), d);
  OpDescriptor base{0, 0, cfxFloat32, cfxSum, -1, 7};
  for (int field = 0; field < 5; ++field) {
    OpDescriptor other = base;
    if (field == 0) other.coll = 3;
    if (field == 1) other.datatype = cfxFloat64;
    if (field == 2) other.op = cfxMax;
    if (field == 3) other.root = 0;
    if (field == 4) other.count = 8;
    EXPECT_NE(packCall(other), packCall(base)) << field;
  }
  EXPECT_EQ(describeCallTag(net::CallTag{packCall(base), 12}), "call #12 (AllReduce count 7 float sum)");
  EXPECT_TRUE((net::CallTag{1, 2}).differsFrom(net::CallTag{1, 3}));
  EXPECT_FALSE((net::CallTag{0, 2}).differsFrom(net::CallTag{1, 3}));  // unchecked
}

}  // namespace
}  // namespace conflux
