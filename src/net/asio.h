// The one way gpulse includes Boost.Asio and Boost.Beast. Debian 12's Boost 1.74 Asio uses
// std::exchange in awaitable.hpp without including <utility>, which GCC 12 rejects under
// -std=c++20; including <utility> first fixes it. Include this only from .cc files: the headers are
// heavy.
#pragma once

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <utility>
