// Series: a bounded ring of compressed chunks (series.h). The bit layout of a chunk and of the
// Serialize image is specified in docs/agent-series-encoding.md; keep the two in step.
#include "agent/series.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpulse::agent {

struct Series::Chunk {
  // What the encoder (or a decoder replaying the stream) carries from one point to the next.
  struct State {
    std::int64_t last_ms = 0;      // time of the newest point
    std::uint64_t prev_delta = 0;  // its delta from the point before (0 before the second point)
    std::uint64_t ref_bits = 0;    // bits of the newest present value: the XOR reference
    std::uint64_t ref_scaled = 0;  // newest value coded as thousandths (two's complement)
    std::uint8_t window_lead = 0;  // XOR window: leading zero bits, then meaningful bits
    std::uint8_t window_len = 64;
    bool last_present = false;  // whether the newest point has a value
  };

  std::vector<std::uint8_t> stream;  // bits, most significant bit of each byte first
  std::int64_t first_ms = 0;         // the first point's time; the stream does not hold it
  std::uint32_t bit_len = 0;         // bits used in `stream` (the last byte is zero-padded)
  std::uint32_t count = 0;           // points, 1..kChunkPoints
  State state;                       // to append, and newest time/value for Latest and Query
};

namespace {

using Chunk = Series::Chunk;
using CodecState = Series::Chunk::State;

// Widths of the five buckets that follow a unary prefix of 0..4 one bits ('0', '10', '110',
// '1110', '1111'). A timestamp's zigzagged delta-of-delta of 0 costs the single bit '0'.
using Buckets = std::array<int, 5>;
constexpr Buckets kDodBuckets = {0, 7, 9, 12, 64};
constexpr Buckets kScaledBuckets = {7, 14, 22, 32, 64};
constexpr int kBucketPrefixMax = 4;

// Value codes, a unary prefix of up to three bits.
constexpr int kValueUnchanged = 0;  // '0': same as the point before (present or absent)
constexpr int kValueScaled = 1;     // '10': thousandths, delta from the last scaled value
constexpr int kValueXor = 2;        // '110': XOR with the last present value
constexpr int kValueAbsent = 3;     // '111'
constexpr int kValuePrefixMax = 3;

constexpr int kWindowFieldBits = 6;  // leading zeros, and meaningful length minus one

// The worst a point can cost, which bounds every chunk and so WorstCaseBytes.
constexpr std::size_t kMaxTimeBits = kBucketPrefixMax + 64;
constexpr std::size_t kMaxValueBits = kValuePrefixMax + 1 + 2 * kWindowFieldBits + 64;
constexpr std::size_t kMaxChunkBits =
    (Series::kChunkPoints - 1) * kMaxTimeBits + Series::kChunkPoints * kMaxValueBits;
constexpr std::size_t kMaxStreamBytes = (kMaxChunkBits + 7) / 8;
constexpr std::size_t kMaxPointBytes = (kMaxTimeBits + kMaxValueBits + 7) / 8;
constexpr std::size_t kInitialStreamBytes = 64;

static_assert(kMaxChunkBits <= std::numeric_limits<std::uint32_t>::max());

std::uint64_t ZigZag(std::uint64_t v) {
  return (v << 1) ^ static_cast<std::uint64_t>(static_cast<std::int64_t>(v) >> 63);
}
std::uint64_t UnZigZag(std::uint64_t z) { return (z >> 1) ^ (0 - (z & 1)); }

double FromThousandths(std::uint64_t s) {
  return static_cast<double>(static_cast<std::int64_t>(s)) / 1000.0;
}

// The value as an exact number of thousandths, when it is one, so that watts from milliwatts and
// integer readings cost a small integer delta. The test is on the bits decoding gives back, which
// sends -0.0 (it would come back as +0.0) to the XOR code.
std::optional<std::uint64_t> Thousandths(double v) {
  const double x = v * 1000.0;
  if (!(std::fabs(x) < 0x1p62)) return std::nullopt;
  const auto s = static_cast<std::uint64_t>(std::llround(x));
  if (std::bit_cast<std::uint64_t>(FromThousandths(s)) != std::bit_cast<std::uint64_t>(v)) {
    return std::nullopt;
  }
  return s;
}

// ---- Writing ----

// Appends the low `n` bits of `v` (0 <= n <= 64), most significant first. The caller reserved
// room, so push_back never reallocates (see ReserveForPoint).
void PutBits(Chunk& c, std::uint64_t v, int n) {
  while (n > 0) {
    const int used = static_cast<int>(c.bit_len & 7);
    if (used == 0) c.stream.push_back(0);
    const int room = 8 - used;
    const int take = std::min(n, room);
    const auto part = static_cast<std::uint8_t>((v >> (n - take)) & ((1u << take) - 1));
    c.stream.back() |= static_cast<std::uint8_t>(part << (room - take));
    c.bit_len += static_cast<std::uint32_t>(take);
    n -= take;
  }
}

// k one bits, then a zero unless k == max.
void PutPrefix(Chunk& c, int k, int max) {
  if (k < max) {
    PutBits(c, ((std::uint64_t{1} << k) - 1) << 1, k + 1);
  } else {
    PutBits(c, (std::uint64_t{1} << max) - 1, max);
  }
}

bool FitsIn(std::uint64_t v, int width) { return width >= 64 || (v >> width) == 0; }

void PutBucketed(Chunk& c, std::uint64_t zz, const Buckets& widths) {
  int k = 0;
  while (k < kBucketPrefixMax && !FitsIn(zz, widths[k])) ++k;
  PutPrefix(c, k, kBucketPrefixMax);
  PutBits(c, zz, widths[k]);
}

// Grows the open chunk's stream so that one more point fits, by doubling but never past the most
// a full chunk can need: WorstCaseBytes counts on no stream ever holding more capacity than that
// (reserve allocates exactly what it is asked for in libstdc++ and libc++; bytes() reports the
// capacity actually held, and the tests hold it to the bound).
void ReserveForPoint(Chunk& c) {
  const std::size_t need = c.stream.size() + kMaxPointBytes;
  if (need <= c.stream.capacity()) return;
  const std::size_t grown = std::max({kInitialStreamBytes, 2 * c.stream.capacity(), need});
  c.stream.reserve(std::min(grown, kMaxStreamBytes));
}

void EncodeTime(Chunk& c, std::int64_t t_ms) {
  CodecState& s = c.state;
  // Modular arithmetic: any increasing pair of int64 times has a delta that fits in uint64.
  const std::uint64_t delta =
      static_cast<std::uint64_t>(t_ms) - static_cast<std::uint64_t>(s.last_ms);
  PutBucketed(c, ZigZag(delta - s.prev_delta), kDodBuckets);
  s.prev_delta = delta;
  s.last_ms = t_ms;
}

void EncodeXor(Chunk& c, std::uint64_t x) {
  CodecState& s = c.state;
  // A zero XOR (the value from before an absent run, again) has no meaningful bit; give it one.
  const int lead = x == 0 ? 63 : std::countl_zero(x);
  const int trail = x == 0 ? 0 : std::countr_zero(x);
  const int len = 64 - lead - trail;
  const int window_trail = 64 - s.window_lead - s.window_len;
  const bool fits = lead >= s.window_lead && trail >= window_trail;
  if (fits && s.window_len <= len + 2 * kWindowFieldBits) {
    PutBits(c, 0, 1);
    PutBits(c, x >> window_trail, s.window_len);
    return;
  }
  PutBits(c, 1, 1);
  PutBits(c, static_cast<std::uint64_t>(lead), kWindowFieldBits);
  PutBits(c, static_cast<std::uint64_t>(len - 1), kWindowFieldBits);
  PutBits(c, x >> trail, len);
  s.window_lead = static_cast<std::uint8_t>(lead);
  s.window_len = static_cast<std::uint8_t>(len);
}

// `present` and `v` rather than an optional: GCC warns of a maybe-uninitialized optional here.
void EncodeValue(Chunk& c, bool present, double v) {
  CodecState& s = c.state;
  if (!present) {
    PutPrefix(c, s.last_present ? kValueAbsent : kValueUnchanged, kValuePrefixMax);
    s.last_present = false;
    return;
  }
  const auto bits = std::bit_cast<std::uint64_t>(v);
  if (s.last_present && bits == s.ref_bits) {
    PutPrefix(c, kValueUnchanged, kValuePrefixMax);
    return;
  }
  if (const std::optional<std::uint64_t> scaled = Thousandths(v)) {
    PutPrefix(c, kValueScaled, kValuePrefixMax);
    PutBucketed(c, ZigZag(*scaled - s.ref_scaled), kScaledBuckets);
    s.ref_scaled = *scaled;
  } else {
    PutPrefix(c, kValueXor, kValuePrefixMax);
    EncodeXor(c, bits ^ s.ref_bits);
  }
  s.ref_bits = bits;
  s.last_present = true;
}

// ---- Reading ----

// Reads a chunk's bits. Reading past the end yields zeros and sets overrun(), so a corrupt stream
// can be detected (on Parse) without any read leaving the buffer.
class BitReader {
 public:
  BitReader(const std::uint8_t* data, std::uint32_t len_bits) : data_(data), len_(len_bits) {}

  // 0 <= n <= 64
  std::uint64_t Read(int n) {
    if (static_cast<std::uint32_t>(n) > len_ - pos_) {
      overrun_ = true;
      pos_ = len_;
      return 0;
    }
    std::uint64_t v = 0;
    while (n > 0) {
      const int used = static_cast<int>(pos_ & 7);
      const int avail = 8 - used;
      const int take = std::min(n, avail);
      const unsigned byte = data_[pos_ >> 3];
      v = (v << take) | ((byte >> (avail - take)) & ((1u << take) - 1));
      pos_ += static_cast<std::uint32_t>(take);
      n -= take;
    }
    return v;
  }

  // Counts one bits up to `max`, consuming the zero that ends a shorter prefix.
  int Prefix(int max) {
    int k = 0;
    while (k < max && Read(1) == 1) ++k;
    return k;
  }

  std::uint64_t Bucketed(const Buckets& widths) { return Read(widths[Prefix(kBucketPrefixMax)]); }

  bool overrun() const { return overrun_; }
  std::uint32_t pos() const { return pos_; }

 private:
  const std::uint8_t* data_;
  std::uint32_t len_;
  std::uint32_t pos_ = 0;
  bool overrun_ = false;
};

// Replays a chunk point by point: Query decodes with it, and Parse checks a stream end to end with
// it and takes from it the state that appends continue from.
class ChunkDecoder {
 public:
  explicit ChunkDecoder(const Chunk& c) : bits_(c.stream.data(), c.bit_len), left_(c.count) {
    state_.last_ms = c.first_ms;
  }

  // Decodes the next point into `t_ms` and `value`. False at the end of the chunk, or when the
  // stream is corrupt (failed()), which only a hostile image handed to Parse can cause.
  bool Next(std::int64_t& t_ms, std::optional<double>& value) {
    if (left_ == 0 || failed_) return false;
    if (!first_ && !DecodeTime()) return Fail();
    if (!DecodeValue()) return Fail();
    if (bits_.overrun()) return Fail();
    first_ = false;
    --left_;
    t_ms = state_.last_ms;
    value = state_.last_present ? std::optional<double>(std::bit_cast<double>(state_.ref_bits))
                                : std::nullopt;
    return true;
  }

  bool failed() const { return failed_; }
  std::uint32_t bits_read() const { return bits_.pos(); }
  const CodecState& state() const { return state_; }

 private:
  bool Fail() {
    failed_ = true;
    return false;
  }

  bool DecodeTime() {
    const std::uint64_t delta = state_.prev_delta + UnZigZag(bits_.Bucketed(kDodBuckets));
    const auto t = static_cast<std::int64_t>(static_cast<std::uint64_t>(state_.last_ms) + delta);
    if (t <= state_.last_ms) return false;  // time must strictly increase
    state_.prev_delta = delta;
    state_.last_ms = t;
    return true;
  }

  bool DecodeValue() {
    switch (bits_.Prefix(kValuePrefixMax)) {
      case kValueUnchanged:
        return true;
      case kValueScaled:
        state_.ref_scaled += UnZigZag(bits_.Bucketed(kScaledBuckets));
        state_.ref_bits = std::bit_cast<std::uint64_t>(FromThousandths(state_.ref_scaled));
        state_.last_present = true;
        return true;
      case kValueXor:
        return DecodeXor();
      default:
        state_.last_present = false;
        return true;
    }
  }

  bool DecodeXor() {
    if (bits_.Read(1) == 1) {
      const auto lead = static_cast<int>(bits_.Read(kWindowFieldBits));
      const auto len = static_cast<int>(bits_.Read(kWindowFieldBits)) + 1;
      if (lead + len > 64) return false;
      state_.window_lead = static_cast<std::uint8_t>(lead);
      state_.window_len = static_cast<std::uint8_t>(len);
    }
    const int trail = 64 - state_.window_lead - state_.window_len;
    const std::uint64_t x = bits_.Read(state_.window_len) << trail;
    state_.ref_bits ^= x;
    state_.last_present = true;
    // Append never stores NaN or infinity, so an image holding one is not ours.
    return std::isfinite(std::bit_cast<double>(state_.ref_bits));
  }

  BitReader bits_;
  CodecState state_;
  std::uint32_t left_;
  bool first_ = true;
  bool failed_ = false;
};

// ---- The image ----

constexpr char kMagic[4] = {'G', 'P', 'S', 'R'};
constexpr std::uint8_t kVersion = 1;
constexpr std::size_t kImageHeaderBytes = sizeof(kMagic) + 1 + 8 + 4;
constexpr std::size_t kChunkHeaderBytes = 8 + 2 + 4;
constexpr std::size_t kCrcBytes = 4;

// CRC-32 (the IEEE polynomial, reflected, as zlib and PNG use it), so that a flipped bit in a
// spilled image is refused rather than decoded into plausible but wrong history.
constexpr std::array<std::uint32_t, 256> MakeCrcTable() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t r = i;
    for (int k = 0; k < 8; ++k) r = (r >> 1) ^ ((r & 1) ? 0xEDB88320u : 0u);
    table[i] = r;
  }
  return table;
}
constexpr std::array<std::uint32_t, 256> kCrcTable = MakeCrcTable();

std::uint32_t Crc32(std::string_view bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const char ch : bytes) {
    crc = (crc >> 8) ^ kCrcTable[(crc ^ static_cast<std::uint8_t>(ch)) & 0xFF];
  }
  return crc ^ 0xFFFFFFFFu;
}

void PutLe(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// Little-endian fields from a byte range; reading past the end yields 0 and clears ok().
class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}

  std::uint64_t Le(int n) {
    if (remaining() < static_cast<std::size_t>(n)) {
      ok_ = false;
      pos_ = bytes_.size();
      return 0;
    }
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
      v |= std::uint64_t{static_cast<std::uint8_t>(bytes_[pos_ + i])} << (8 * i);
    }
    pos_ += static_cast<std::size_t>(n);
    return v;
  }

  // REQUIRES: n <= remaining()
  std::string_view Take(std::size_t n) {
    std::string_view s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }

  std::size_t remaining() const { return bytes_.size() - pos_; }
  bool ok() const { return ok_; }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

Error Corrupt(const std::string& what) { return InvalidArgument("series image: " + what); }

// Replays a chunk read from an image, so that Query can trust it, and recovers its append state.
std::optional<Error> CheckStream(Chunk& c) {
  if (c.bit_len % 8 != 0 && (c.stream.back() & ((1u << (8 - c.bit_len % 8)) - 1)) != 0) {
    return Corrupt("padding bits are not zero");
  }
  ChunkDecoder decoder(c);
  std::int64_t t = 0;
  std::optional<double> v;
  std::uint32_t n = 0;
  while (decoder.Next(t, v)) ++n;
  if (decoder.failed() || n != c.count || decoder.bits_read() != c.bit_len) {
    return Corrupt("corrupt point stream");
  }
  c.state = decoder.state();
  return std::nullopt;
}

Result<Chunk> ParseChunk(ByteReader& r) {
  Chunk c;
  c.first_ms = static_cast<std::int64_t>(r.Le(8));
  c.count = static_cast<std::uint32_t>(r.Le(2));
  c.bit_len = static_cast<std::uint32_t>(r.Le(4));
  if (!r.ok()) return Corrupt("truncated chunk header");
  if (c.count == 0 || c.count > Series::kChunkPoints) {
    return Corrupt("chunk point count " + std::to_string(c.count) + " outside 1.." +
                   std::to_string(Series::kChunkPoints));
  }
  if (c.bit_len == 0 || c.bit_len > kMaxChunkBits) {
    return Corrupt("chunk stream length " + std::to_string(c.bit_len) + " bits out of range");
  }
  const std::size_t n = (c.bit_len + 7) / 8;
  if (n > r.remaining()) return Corrupt("truncated chunk stream");
  const std::string_view bytes = r.Take(n);
  c.stream.assign(bytes.begin(), bytes.end());
  if (std::optional<Error> e = CheckStream(c)) return *std::move(e);
  return c;
}

// The most chunks a series bounded by max_points holds at once (Append pushes the new chunk
// before it drops the oldest): all but the last are full and fewer than max_points + kChunkPoints
// points are kept, so ceil(max_points / kChunkPoints) + 1. Written so that it cannot overflow.
std::size_t PeakChunks(std::size_t max_points) {
  return (max_points - 1) / Series::kChunkPoints + 2;
}

// Every chunk but the last is full (Append, the drops and Parse all keep it so).
std::size_t PointsIn(const std::vector<Chunk>& chunks) {
  if (chunks.empty()) return 0;
  return (chunks.size() - 1) * Series::kChunkPoints + chunks.back().count;
}

// Opens a chunk whose first point is at t_ms. The list grows by hand, never past PeakChunks, for
// the same reason as ReserveForPoint.
void StartChunk(std::vector<Chunk>& chunks, std::size_t max_points, std::int64_t t_ms) {
  if (chunks.size() == chunks.capacity()) {
    const std::size_t grown = std::max<std::size_t>(4, 2 * chunks.capacity());
    chunks.reserve(std::max(chunks.size() + 1, std::min(grown, PeakChunks(max_points))));
  }
  Chunk& c = chunks.emplace_back();
  c.first_ms = t_ms;
  c.state.last_ms = t_ms;
}

// Drops the oldest chunks while what remains still holds max_points points.
void EnforceBound(std::vector<Chunk>& chunks, std::size_t max_points) {
  std::size_t total = PointsIn(chunks);
  std::size_t n = 0;
  while (n + 1 < chunks.size() && total - chunks[n].count >= max_points) {
    total -= chunks[n].count;
    ++n;
  }
  chunks.erase(chunks.begin(), chunks.begin() + static_cast<std::ptrdiff_t>(n));
}

// What Serialize can produce: every chunk but the last full, and no more chunks than the bound
// keeps. PointsIn, the drops and WorstCaseBytes rely on it.
std::optional<Error> CheckShape(const std::vector<Chunk>& chunks, std::size_t max_points) {
  for (std::size_t i = 0; i + 1 < chunks.size(); ++i) {
    if (chunks[i].count != Series::kChunkPoints) {
      return Corrupt("a chunk before the last is not full");
    }
  }
  if (chunks.size() > 1 && PointsIn(chunks) - chunks.front().count >= max_points) {
    return Corrupt("more points than the bound of " + std::to_string(max_points) + " keeps");
  }
  return std::nullopt;
}

}  // namespace

Series::Series(std::size_t max_points) : max_points_(std::max<std::size_t>(max_points, 1)) {}
Series::Series(Series&&) noexcept = default;
Series& Series::operator=(Series&&) noexcept = default;
Series::~Series() = default;

// NaN and infinities are stored as absent: a reading is never either, and an exact round trip
// of every NaN payload is not worth a code.
bool Series::Append(std::int64_t t_ms, std::optional<double> value) {
  if (!chunks_.empty() && t_ms <= chunks_.back().state.last_ms) return false;
  const double v = value.value_or(0.0);
  const bool present = value.has_value() && std::isfinite(v);
  if (chunks_.empty() || chunks_.back().count == kChunkPoints) {
    StartChunk(chunks_, max_points_, t_ms);
  }
  Chunk& c = chunks_.back();
  ReserveForPoint(c);
  if (c.count > 0) EncodeTime(c, t_ms);
  EncodeValue(c, present, v);
  if (++c.count == kChunkPoints) c.stream.shrink_to_fit();  // closed for good: give back slack
  EnforceBound(chunks_, max_points_);
  return true;
}

void Series::Query(std::int64_t from_ms, std::int64_t until_ms, std::vector<Point>& out) const {
  if (from_ms >= until_ms) return;
  // Chunks are in time order: skip those wholly before the range without decoding them.
  auto it = std::partition_point(chunks_.begin(), chunks_.end(),
                                 [from_ms](const Chunk& c) { return c.state.last_ms < from_ms; });
  for (; it != chunks_.end() && it->first_ms < until_ms; ++it) {
    ChunkDecoder decoder(*it);
    Point p;
    while (decoder.Next(p.t_ms, p.value) && p.t_ms < until_ms) {
      if (p.t_ms >= from_ms) out.push_back(p);
    }
  }
}

std::optional<Point> Series::Latest() const {
  if (chunks_.empty()) return std::nullopt;
  const CodecState& s = chunks_.back().state;
  Point p;
  p.t_ms = s.last_ms;
  if (s.last_present) p.value = std::bit_cast<double>(s.ref_bits);
  return p;
}

std::optional<std::int64_t> Series::OldestMs() const {
  if (chunks_.empty()) return std::nullopt;
  return chunks_.front().first_ms;
}

std::size_t Series::DropOlderThan(std::int64_t t_ms) {
  const auto end = std::partition_point(chunks_.begin(), chunks_.end(),
                                        [t_ms](const Chunk& c) { return c.state.last_ms < t_ms; });
  std::size_t dropped = 0;
  for (auto it = chunks_.begin(); it != end; ++it) dropped += it->count;
  chunks_.erase(chunks_.begin(), end);
  return dropped;
}

void Series::SetMaxPoints(std::size_t max_points) {
  max_points_ = std::max<std::size_t>(max_points, 1);
  EnforceBound(chunks_, max_points_);
  // A lower bound lowers WorstCaseBytes, which counts the chunk list's capacity too.
  if (chunks_.capacity() > PeakChunks(max_points_)) {
    std::vector<Chunk> compact;
    compact.reserve(chunks_.size());
    std::move(chunks_.begin(), chunks_.end(), std::back_inserter(compact));
    chunks_ = std::move(compact);
  }
}

std::size_t Series::size() const { return PointsIn(chunks_); }

std::size_t Series::bytes() const {
  std::size_t total = chunks_.capacity() * sizeof(Chunk);
  for (const Chunk& c : chunks_) total += c.stream.capacity();
  return total;
}

std::size_t Series::WorstCaseBytes(std::size_t max_points) {
  const std::size_t chunks = PeakChunks(std::max<std::size_t>(max_points, 1));
  constexpr std::size_t kPerChunk = sizeof(Chunk) + kMaxStreamBytes;
  if (chunks > std::numeric_limits<std::size_t>::max() / kPerChunk) {
    return std::numeric_limits<std::size_t>::max();
  }
  return chunks * kPerChunk;
}

std::string Series::Serialize() const {
  std::size_t n = kImageHeaderBytes + kCrcBytes;
  for (const Chunk& c : chunks_) n += kChunkHeaderBytes + c.stream.size();
  std::string out;
  out.reserve(n);
  out.append(kMagic, sizeof(kMagic));
  PutLe(out, kVersion, 1);
  PutLe(out, max_points_, 8);
  PutLe(out, chunks_.size(), 4);
  for (const Chunk& c : chunks_) {
    PutLe(out, static_cast<std::uint64_t>(c.first_ms), 8);
    PutLe(out, c.count, 2);
    PutLe(out, c.bit_len, 4);
    out.append(c.stream.begin(), c.stream.end());
  }
  PutLe(out, Crc32(out), 4);
  return out;
}

Result<Series> Series::Parse(std::string_view image) {
  if (image.size() < kImageHeaderBytes + kCrcBytes) {
    return Corrupt("truncated (" + std::to_string(image.size()) + " bytes)");
  }
  if (image.substr(0, sizeof(kMagic)) != std::string_view(kMagic, sizeof(kMagic))) {
    return Corrupt("not a series image (bad magic)");
  }
  const auto version = static_cast<std::uint8_t>(image[sizeof(kMagic)]);
  if (version != kVersion) return Corrupt("unsupported version " + std::to_string(version));
  const std::string_view body = image.substr(0, image.size() - kCrcBytes);
  if (ByteReader(image.substr(body.size())).Le(4) != Crc32(body)) {
    return Corrupt("checksum mismatch (truncated or corrupt)");
  }
  ByteReader r(body.substr(sizeof(kMagic) + 1));
  const std::uint64_t max_points = r.Le(8);
  const std::uint64_t count = r.Le(4);
  if (max_points == 0 || max_points > std::numeric_limits<std::size_t>::max()) {
    return Corrupt("bound of " + std::to_string(max_points) + " points out of range");
  }
  // Counted against the bytes there, so a forged count cannot make us allocate.
  if (count > r.remaining() / kChunkHeaderBytes) {
    return Corrupt(std::to_string(count) + " chunks cannot fit in the image");
  }
  Series s(static_cast<std::size_t>(max_points));
  s.chunks_.reserve(static_cast<std::size_t>(count));
  for (std::uint64_t i = 0; i < count; ++i) {
    Result<Chunk> c = ParseChunk(r);
    if (!c.ok())
      return Error{c.error().code, c.error().message + " (chunk " + std::to_string(i) + ")"};
    if (!s.chunks_.empty() && c->first_ms <= s.chunks_.back().state.last_ms) {
      return Corrupt("chunks out of time order (chunk " + std::to_string(i) + ")");
    }
    s.chunks_.push_back(std::move(c).value());
  }
  if (r.remaining() != 0) return Corrupt("trailing bytes after the last chunk");
  if (std::optional<Error> e = CheckShape(s.chunks_, s.max_points_)) return *std::move(e);
  return Result<Series>(std::move(s));
}

}  // namespace gpulse::agent
