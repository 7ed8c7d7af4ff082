#include "cli/agent_reply.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace gpulse::cli {

Result<AgentReply> ParseReply(const std::string& raw, const std::string& shown) {
  std::size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos || raw.size() < 12) {
    return Unavailable("the agent at " + shown + " sent no HTTP response");
  }
  AgentReply r;
  r.status = std::atoi(raw.c_str() + 9);
  std::string head = raw.substr(0, head_end);
  for (std::size_t at = head.find("\r\n"); at != std::string::npos;
       at = head.find("\r\n", at + 2)) {
    std::size_t end = head.find("\r\n", at + 2);
    std::string line =
        head.substr(at + 2, end == std::string::npos ? std::string::npos : end - at - 2);
    std::string lower = line;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.rfind("content-type:", 0) == 0) {
      r.content_type = line.substr(13);
      r.content_type.erase(0, r.content_type.find_first_not_of(' '));
    }
  }
  r.body = raw.substr(head_end + 4);
  if (r.content_type.rfind("application/json", 0) == 0) {
    r.json = nlohmann::json::parse(r.body, nullptr, false);
  }
  return r;
}

bool StreamBody::Decode(std::string& raw, std::string& out) {
  if (!chunked_) {
    bool any = !raw.empty();
    out += raw;
    raw.clear();
    return any;
  }
  bool any = false;
  while (!ended_) {
    if (left_ == 0) {
      std::size_t eol = raw.find("\r\n");
      if (eol == std::string::npos) return any;
      if (eol == 0) {  // the CRLF after a chunk's data
        raw.erase(0, 2);
        continue;
      }
      left_ = std::strtoull(raw.substr(0, eol).c_str(), nullptr, 16);
      raw.erase(0, eol + 2);
      if (left_ == 0) {
        ended_ = true;
        return any;
      }
    }
    std::size_t take = std::min<std::size_t>(left_, raw.size());
    if (take == 0) return any;
    out.append(raw, 0, take);
    raw.erase(0, take);
    left_ -= take;
    any = true;
  }
  return any;
}

}  // namespace gpulse::cli
