#include "datapath/transport/socket_util.h"

#include <sys/socket.h>

#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace weft::datapath {
namespace {

TEST(ParseHostPortTest, AcceptsNamesIpv4AndBracketedIpv6) {
  auto a = ParseHostPort("10.0.0.1:29500");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "10.0.0.1");
  EXPECT_EQ(a->port, 29500);
  auto b = ParseHostPort("[::1]:80");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(FormatHostPort(*b), "[::1]:80");
  EXPECT_EQ(FormatHostPort(*a), "10.0.0.1:29500");
  for (const char* bad : {"", "host", ":80", "host:", "host:99999", "host:x", "[::1]80"}) {
    EXPECT_EQ(ParseHostPort(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(SocketUtilTest, ConnectAcceptAndMoveBytes) {
  auto listener = ListenTcp("127.0.0.1", 0, 4);
  ASSERT_TRUE(listener.ok()) << listener.status();
  auto port = LocalPort(listener->get());
  ASSERT_TRUE(port.ok());
  std::string received(1 << 20, '\0');
  std::thread server([&] {
    auto conn = AcceptTcp(listener->get(), absl::Seconds(10));
    ASSERT_TRUE(conn.ok()) << conn.status();
    ASSERT_TRUE(
        ReadFull(conn->get(), received.data(), received.size(), absl::Now() + absl::Seconds(10))
            .ok());
  });
  auto client = ConnectTcp({"127.0.0.1", *port}, absl::Seconds(10));
  ASSERT_TRUE(client.ok()) << client.status();
  std::string payload(1 << 20, 'x');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 7);
  ASSERT_TRUE(
      WriteFull(client->get(), payload.data(), payload.size(), absl::Now() + absl::Seconds(10))
          .ok());
  server.join();
  EXPECT_EQ(received, payload);
}

TEST(SocketUtilTest, ConnectToNobodyGivesUpAtTheDeadline) {
  // Take a free port, then close it so nothing listens there.
  int port = 0;
  {
    auto listener = ListenTcp("127.0.0.1", 0, 1);
    ASSERT_TRUE(listener.ok());
    port = *LocalPort(listener->get());
  }
  auto client = ConnectTcp({"127.0.0.1", port}, absl::Milliseconds(30));
  EXPECT_EQ(client.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(client.status().message().find("Connection refused"), absl::string_view::npos)
      << client.status();
}

TEST(SocketUtilTest, ReadFromClosedPeerIsUnavailable) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  ScopedFd a(fds[0]);
  ScopedFd b(fds[1]);
  b.Reset();
  char byte;
  EXPECT_EQ(ReadFull(a.get(), &byte, 1, absl::Now() + absl::Seconds(1)).code(),
            absl::StatusCode::kUnavailable);
}

TEST(SocketUtilTest, ReadTimesOut) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  ScopedFd a(fds[0]);
  ScopedFd b(fds[1]);
  char byte;
  EXPECT_EQ(ReadFull(a.get(), &byte, 1, absl::Now() + absl::Milliseconds(5)).code(),
            absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace weft::datapath
