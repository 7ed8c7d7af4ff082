// A synchronous read stream over the fuzz input for Boost.Beast's parsers: each read_some returns
// at most `chunk` bytes (as a socket returns what has arrived) and end of stream after the last,
// so http::read and http::read_header run the same loop over the same flat_buffer as the server's
// and the client's async reads.
#pragma once

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/throw_exception.hpp>
#include <cstddef>
#include <string_view>

namespace gpulse::fuzz {

class ByteStream {
 public:
  ByteStream(std::string_view bytes, std::size_t chunk)
      : rest_(bytes), chunk_(chunk ? chunk : bytes.size() + 1) {}

  template <class MutableBufferSequence>
  std::size_t read_some(const MutableBufferSequence& buffers, boost::beast::error_code& ec) {
    ec = {};
    if (rest_.empty()) {
      ec = boost::asio::error::eof;
      return 0;
    }
    std::size_t want = std::min(chunk_, rest_.size());
    std::size_t n = boost::asio::buffer_copy(buffers, boost::asio::buffer(rest_.data(), want));
    rest_.remove_prefix(n);
    return n;
  }

  template <class MutableBufferSequence>
  std::size_t read_some(const MutableBufferSequence& buffers) {
    boost::beast::error_code ec;
    std::size_t n = read_some(buffers, ec);
    if (ec) boost::throw_exception(boost::system::system_error(ec));
    return n;
  }

  std::size_t remaining() const { return rest_.size(); }

 private:
  std::string_view rest_;
  std::size_t chunk_;
};

}  // namespace gpulse::fuzz
