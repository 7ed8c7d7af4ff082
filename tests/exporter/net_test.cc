// The HTTP layer's pure parts: Accept-Encoding, listen addresses, base64, gzip, bcrypt basic auth
// and the exporter-toolkit web config.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "net/basic_auth.h"
#include "net/http_util.h"
#include "net/web_config.h"

namespace gpulse::net {
namespace {

// bcrypt of "s3cret" at cost 4 (cheap for tests), made with Python's crypt module.
constexpr const char* kHash = "$2b$04$ha0KYCrOY6At92i6QaM6heiRC81At8JE1DGtkrDPXhfZBh/BPrIg6";

TEST(HttpUtil, AcceptEncoding) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("deflate, GZIP;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip; q=0.000"));
  EXPECT_FALSE(AcceptsGzip("x-gzip-not"));
}

TEST(HttpUtil, ListenAddresses) {
  struct Case {
    const char* text;
    const char* host;
    unsigned port;
  };
  for (const Case& c : std::vector<Case>{{":9400", "", 9400},
                                         {"127.0.0.1:0", "127.0.0.1", 0},
                                         {"[::1]:9401", "::1", 9401},
                                         {"[::]:9400", "::", 9400},
                                         {"localhost:80", "localhost", 80}}) {
    auto a = ParseListenAddress(c.text);
    ASSERT_TRUE(a.ok()) << c.text;
    EXPECT_EQ(a->host, c.host);
    EXPECT_EQ(a->port, c.port);
  }
  for (const char* bad : {"9400", ":99999", ":port", "::1:9400", "[::1:9400", ""}) {
    EXPECT_FALSE(ParseListenAddress(bad).ok()) << bad;
  }
}

TEST(HttpUtil, Base64) {
  EXPECT_EQ(*Base64Decode("YWxpY2U6czNjcmV0"), "alice:s3cret");
  EXPECT_EQ(*Base64Decode("YQ=="), "a");
  EXPECT_EQ(*Base64Decode("YWI="), "ab");
  EXPECT_EQ(*Base64Decode(""), "");
  EXPECT_FALSE(Base64Decode("YQ="));
  EXPECT_FALSE(Base64Decode("Y!=="));
  EXPECT_FALSE(Base64Decode("YQ==YQ=="));
}

TEST(HttpUtil, GzipRoundTripsThroughZlib) {
  std::string body(10000, 'x');
  auto z = Gzip(body, 1);
  ASSERT_TRUE(z.ok());
  EXPECT_LT(z->size(), body.size() / 10);
  EXPECT_EQ(static_cast<unsigned char>((*z)[0]), 0x1f) << "gzip magic";
  std::string back(body.size(), '\0');
  z_stream s{};
  ASSERT_EQ(inflateInit2(&s, 15 + 16), Z_OK);
  s.next_in = reinterpret_cast<Bytef*>(z->data());
  s.avail_in = static_cast<uInt>(z->size());
  s.next_out = reinterpret_cast<Bytef*>(back.data());
  s.avail_out = static_cast<uInt>(back.size());
  EXPECT_EQ(inflate(&s, Z_FINISH), Z_STREAM_END);
  inflateEnd(&s);
  EXPECT_EQ(back, body);
}

TEST(BasicAuth, BcryptHashesVerify) {
  EXPECT_TRUE(BcryptMatches("s3cret", kHash));
  EXPECT_FALSE(BcryptMatches("wrong", kHash));
  EXPECT_FALSE(BcryptMatches("s3cret", "$2b$04$notavalidhash"));
}

TEST(BasicAuth, ChecksAuthorizationHeadersAndCachesVerdicts) {
  auto auth = BasicAuth::Create({{"alice", kHash}});
  ASSERT_TRUE(auth.ok());
  EXPECT_TRUE(auth->Check("Basic YWxpY2U6czNjcmV0"));  // alice:s3cret
  EXPECT_TRUE(auth->Check("basic YWxpY2U6czNjcmV0"));
  EXPECT_EQ(auth->cached(), 1u) << "the same credentials are verified once";
  EXPECT_FALSE(auth->Check("Basic YWxpY2U6d3Jvbmc="));  // alice:wrong
  EXPECT_FALSE(auth->Check("Basic Ym9iOnMzY3JldA=="));  // bob:s3cret
  EXPECT_FALSE(auth->Check("Bearer YWxpY2U6czNjcmV0"));
  EXPECT_FALSE(auth->Check("Basic !!!"));
  EXPECT_FALSE(auth->Check(""));
}

TEST(BasicAuth, RejectsHashesThatAreNotBcrypt) {
  auto auth = BasicAuth::Create({{"alice", "plaintext"}});
  ASSERT_FALSE(auth.ok());
  EXPECT_NE(auth.error().message.find("alice"), std::string::npos);
  // A cost bcrypt refuses (every login would then fail silently) is refused at load.
  std::string cost99 = kHash;
  cost99.replace(4, 2, "99");
  EXPECT_FALSE(BasicAuth::Create({{"alice", cost99}}).ok());
  std::string cost03 = kHash;
  cost03.replace(4, 2, "03");
  EXPECT_FALSE(BasicAuth::Create({{"alice", cost03}}).ok());
  std::string cost31 = kHash;
  cost31.replace(4, 2, "31");
  EXPECT_TRUE(BasicAuth::Create({{"alice", cost31}}).ok());
}

TEST(BasicAuth, AnUnknownUserCostsAsMuchAsAWrongPassword) {
  std::string cost10 = "$2b$10$" + std::string(kHash).substr(7);
  auto auth = BasicAuth::Create({{"alice", kHash}, {"bob", cost10}});
  ASSERT_TRUE(auth.ok());
  const std::string& dummy = auth->dummy_hash();
  ASSERT_EQ(dummy.size(), 60u);
  EXPECT_EQ(dummy.substr(0, 7), "$2b$10$") << "the highest configured cost";
  EXPECT_FALSE(BcryptMatches("s3cret", dummy));
  EXPECT_FALSE(auth->Check("Basic Y2Fyb2w6czNjcmV0"));  // carol:s3cret, unknown: rejected
}

TEST(BasicAuth, APasswordIsNeverCutAtANul) {
  auto auth = BasicAuth::Create({{"alice", kHash}});
  ASSERT_TRUE(auth.ok());
  EXPECT_FALSE(auth->Check("Basic YWxpY2U6czNjcmV0AGFueXRoaW5n"));  // alice:s3cret\0anything
  EXPECT_FALSE(auth->Check("Basic YWxpY2UAOnMzY3JldA=="));          // alice\0:s3cret
  EXPECT_FALSE(auth->Check("Basic YWxpY2U6czNjcmV0DQ=="));          // alice:s3cret\r
  EXPECT_TRUE(auth->Check("Basic YWxpY2U6czNjcmV0"));
}

TEST(WebConfig, FullExample) {
  auto w = ParseWebConfig(
      "tls_server_config:\n"
      "  cert_file: server.crt\n"
      "  key_file: /abs/server.key\n"
      "  min_version: TLS13\n"
      "http_server_config:\n"
      "  http2: false\n"
      "  headers:\n"
      "    X-Frame-Options: deny\n"
      "basic_auth_users:\n"
      "  alice: " +
          std::string(kHash) + "\n",
      "/etc/gpulse", "web.yml");
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_TRUE(w->tls);
  EXPECT_EQ(w->tls->cert_file, "/etc/gpulse/server.crt");
  EXPECT_EQ(w->tls->key_file, "/abs/server.key");
  EXPECT_EQ(w->tls->min_version, TlsVersion::kTls13);
  EXPECT_EQ(w->basic_auth_users.at("alice"), kHash);
  ASSERT_EQ(w->headers.size(), 1u);
  EXPECT_EQ(w->headers[0].first, "X-Frame-Options");
}

TEST(WebConfig, EmptyFileMeansPlainHttp) {
  auto w = ParseWebConfig("", "/", "web.yml");
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w->tls);
  EXPECT_TRUE(w->basic_auth_users.empty());
}

TEST(WebConfig, ErrorsNameTheFileLineAndKey) {
  struct Case {
    std::string yaml;
    const char* want;
  };
  for (const Case& c : std::vector<Case>{
           {"tls_server_confg: {}\n", "web.yml:1: web config: unknown key \"tls_server_confg\""},
           {"tls_server_config:\n  cert_file: a\n", "cert_file and key_file are both required"},
           {"tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS14\n",
            "web.yml:4"},
           {"tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [X]\n",
            "cipher_suites is not supported"},
           {"tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n  "
            "max_version: TLS12\n",
            "below min_version"},
           {"tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: "
            "RequireAndVerifyClientCert\n",
            "needs client_ca_file"},
           {"basic_auth_users:\n  alice: plain\n", "not a bcrypt hash"},
           {"basic_auth_users: [a]\n", "expected a map"},
           {"tls_server_config: [\n", "web.yml"},
           // A duplicated key never turns security off: the empty first value is not kept silently.
           {"tls_server_config:\nbasic_auth_users:\ntls_server_config:\n  cert_file: a\n  "
            "key_file: b\n",
            "web.yml:3: duplicate key \"tls_server_config\" (first at line 1)"},
           {"basic_auth_users:\n  alice: x\n  alice: y\n",
            "web.yml:3: duplicate key \"alice\" in basic_auth_users"},
           // Header values are sent verbatim: CR/LF would inject headers of their own.
           {"http_server_config:\n  headers: {X-A: \"ok\\r\\nSet-Cookie: x=1\"}\n",
            "web.yml:2: http_server_config.headers.X-A: control characters"},
           {"http_server_config:\n  headers: {\"X A\": ok}\n",
            "\"X A\" is not a valid header name"},
           // exporter-toolkit's allow-list: a header that would change what a response is, no.
           {"http_server_config:\n  headers: {Content-Type: text/html}\n",
            "web.yml:2: http_server_config.headers: \"Content-Type\" can not be configured"},
           {"http_server_config:\n  headers: {Set-Cookie: a=1}\n", "can not be configured"},
           {"http_server_config:\n  headers: {WWW-Authenticate: Basic}\n", "can not be configured"},
           {"http_server_config:\n  headers: {x-frame-options: deny}\n",
            "\"x-frame-options\" can not be configured"},
           {"http_server_config:\n  headers: {X-Frame-Options: allow}\n",
            "X-Frame-Options: \"allow\" is not one of deny, sameorigin"},
           {"http_server_config:\n  headers: {X-Content-Type-Options: sniff}\n",
            "is not one of nosniff"},
       }) {
    auto w = ParseWebConfig(c.yaml, "/d", "web.yml");
    ASSERT_FALSE(w.ok()) << c.yaml;
    EXPECT_NE(w.error().message.find(c.want), std::string::npos)
        << c.yaml << " -> " << w.error().message;
  }
}

TEST(WebConfig, MissingFileIsNotFound) {
  auto w = LoadWebConfig("/nonexistent/web.yml");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace gpulse::net

namespace gpulse::net {
namespace {

TEST(WebConfig, OnlyARegularFileOfBoundedSizeIsRead) {
  auto dir =
      std::filesystem::temp_directory_path() / ("gpulse-webcfg-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string fifo = (dir / "web.fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto w = LoadWebConfig(fifo);  // returns at once: opened without waiting for a writer
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("is not a regular file"), std::string::npos)
      << w.error().message;
  auto z = LoadWebConfig("/dev/zero");
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.error().message.find("/dev/zero\" is not a regular file"), std::string::npos);
  std::string big = (dir / "big.yml").string();
  std::ofstream(big) << std::string(2 << 20, '#');
  auto b = LoadWebConfig(big);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("more than the 1048576"), std::string::npos)
      << b.error().message;
  EXPECT_EQ(LoadWebConfig((dir / "missing.yml").string()).error().code, ErrorCode::kNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpulse::net

namespace gpulse::net {
namespace {

TEST(HttpUtil, PercentEncodeRoundTripsAndBase64EncodeIsDecodesInverse) {
  const std::string odd = std::string("a+b /?%#\xff\x01", 10) + "job-1_2.3~";
  EXPECT_EQ(PercentEncode("a+b c/%"), "a%2Bb%20c%2F%25");
  EXPECT_EQ(PercentDecode(PercentEncode(odd), /*plus_is_space=*/false), odd);
  EXPECT_EQ(Base64Encode("alice:s3cret"), "YWxpY2U6czNjcmV0");
  for (std::string s : {"", "a", "ab", "abc", "abcd"}) {
    EXPECT_EQ(Base64Decode(Base64Encode(s)), s) << s;
  }
}

}  // namespace
}  // namespace gpulse::net
