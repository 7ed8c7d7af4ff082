// The management API's request bodies (agent/request_body.h): what a client sends is refused with a
// message naming the problem, before any route reads it.
#include "agent/request_body.h"

#include <gtest/gtest.h>

#include <string>

namespace gpulse::agent {
namespace {

std::string Refusal(std::string_view body) {
  auto r = ParseRequestBody(body);
  return r.ok() ? std::string("accepted") : r.error().message;
}

TEST(RequestBody, AnObjectIsAcceptedAndEmptyIsAnEmptyObject) {
  auto r = ParseRequestBody(R"({"name": "train", "gpus": [0, 1], "nested": {"a": 1}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["name"], "train");
  auto empty = ParseRequestBody("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->is_object());
  EXPECT_TRUE(empty->empty());
}

TEST(RequestBody, ARepeatedKeyIsRefusedWhereverItIs) {
  EXPECT_EQ(Refusal(R"({"name": "a", "name": "b"})"),
            "the request body gives the key \"name\" twice in one object");
  EXPECT_EQ(Refusal(R"({"spec": {"watch": 1, "watch": 2}})"),
            "the request body gives the key \"watch\" twice in one object");
  EXPECT_EQ(Refusal(R"({"a": {"k": 1}, "b": {"k": 2}, "c": [{"k": 1}, {"k": 2}]})"), "accepted")
      << "the same key in different objects is fine";
}

TEST(RequestBody, EachOtherProblemIsNamed) {
  EXPECT_EQ(Refusal("{\"name\": \"gr\xff\"}"), "the request body is not valid UTF-8");
  EXPECT_EQ(Refusal("[1, 2]"), "the request body is not a JSON object");
  EXPECT_NE(Refusal("{\"name\": ").find("the request body is not JSON"), std::string::npos);
  EXPECT_NE(Refusal("{\"n\": 9999E99999999999}").find("number overflow"), std::string::npos)
      << "found by fuzzing: an exception other than a parse error";
  EXPECT_NE(Refusal(std::string(40, '[') + std::string(40, ']')).find("too large"),
            std::string::npos);
}

}  // namespace
}  // namespace gpulse::agent
