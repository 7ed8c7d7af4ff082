// A gzip body joined from separately compressed pieces (src/net/gzip_pieces.h): whatever the
// pieces, zlib's own gzip reader inflates the join to their concatenation and accepts its CRC-32
// and length; a kept piece joins any number of bodies.
#include "net/gzip_pieces.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <optional>
#include <string>
#include <vector>

namespace gpulse::net {
namespace {

// zlib's gzip reader (it checks the trailer); nullopt unless the stream ends where the data does.
std::optional<std::string> Gunzip(const std::string& gz) {
  z_stream s{};
  if (inflateInit2(&s, 15 + 16) != Z_OK) return std::nullopt;
  std::string out(1 << 16, '\0');
  std::size_t have = 0;
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  s.avail_in = static_cast<uInt>(gz.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (have == out.size()) out.resize(out.size() * 2);
    s.next_out = reinterpret_cast<Bytef*>(out.data() + have);
    s.avail_out = static_cast<uInt>(out.size() - have);
    rc = inflate(&s, Z_NO_FLUSH);
    have = out.size() - s.avail_out;
  }
  const bool whole = rc == Z_STREAM_END && s.avail_in == 0;
  inflateEnd(&s);
  if (!whole) return std::nullopt;
  out.resize(have);
  return out;
}

std::string Exposition(int lines, int seed) {
  std::string s;
  for (int i = 0; i < lines; ++i) {
    s += "DCGM_FI_DEV_POWER_USAGE{gpu=\"" + std::to_string(i % 8) + "\",UUID=\"GPU-" +
         std::to_string(seed * 7919 + i) + "\"} " + std::to_string((i * 37 + seed) % 700) + "\n";
  }
  return s;
}

std::string Join(const std::vector<const DeflatedPiece*>& pieces) {
  std::string out = "kept";  // GzipJoin appends
  GzipJoin(pieces, out);
  EXPECT_EQ(out.substr(0, 4), "kept");
  return out.substr(4);
}

TEST(GzipPieces, JoinedPiecesInflateToTheirConcatenation) {
  const std::vector<std::string> texts = {Exposition(2000, 1), "", "x", Exposition(3, 2),
                                          std::string(70000, 'a') + Exposition(500, 3)};
  std::vector<DeflatedPiece> pieces;
  std::vector<const DeflatedPiece*> ptrs;
  std::string whole;
  for (const std::string& t : texts) {
    auto p = DeflatePiece(t, 1);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->size, t.size());
    pieces.push_back(std::move(p).value());
    whole += t;
  }
  for (const DeflatedPiece& p : pieces) ptrs.push_back(&p);
  const std::string gz = Join(ptrs);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  EXPECT_LT(gz.size(), whole.size() / 4);
  auto back = Gunzip(gz);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, whole);
}

TEST(GzipPieces, AKeptPieceJoinsManyBodies) {
  auto kept = DeflatePiece(Exposition(1000, 4), 1);
  ASSERT_TRUE(kept.ok());
  for (int scrape = 0; scrape < 3; ++scrape) {
    const std::string ages = "gpulse_device_sample_age_seconds " + std::to_string(scrape) + "\n";
    auto fresh = DeflatePiece(ages, 1);
    ASSERT_TRUE(fresh.ok());
    auto back = Gunzip(Join({&kept.value(), &fresh.value(), &kept.value()}));
    ASSERT_TRUE(back.has_value()) << "scrape " << scrape;
    EXPECT_EQ(*back, Exposition(1000, 4) + ages + Exposition(1000, 4));
  }
}

TEST(GzipPieces, NoPiecesIsAnEmptyBodyAndTheTrailerIsChecked) {
  auto empty = Gunzip(Join({}));
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(*empty, "");
  auto p = DeflatePiece(Exposition(10, 5), 1);
  ASSERT_TRUE(p.ok());
  std::string gz = Join({&p.value()});
  gz[gz.size() - 8] ^= 0x01;  // the CRC-32's first byte
  EXPECT_FALSE(Gunzip(gz).has_value()) << "a wrong CRC-32 must not inflate cleanly";
  gz[gz.size() - 8] ^= 0x01;
  gz[gz.size() - 4] ^= 0x01;  // the length
  EXPECT_FALSE(Gunzip(gz).has_value()) << "a wrong length must not inflate cleanly";
}

TEST(GzipPieces, EveryLevelInflatesTheSame) {
  const std::string text = Exposition(300, 6);
  for (int level = 1; level <= 9; ++level) {
    auto p = DeflatePiece(text, level);
    ASSERT_TRUE(p.ok()) << "level " << level;
    auto back = Gunzip(Join({&p.value()}));
    ASSERT_TRUE(back.has_value()) << "level " << level;
    EXPECT_EQ(*back, text);
  }
}

}  // namespace
}  // namespace gpulse::net
