#include "api/media_type.hpp"

#include <gtest/gtest.h>

namespace plantstore::api {
namespace {

TEST(MediaType, AcceptsJsonWithOrWithoutParameters) {
    for (const char* type :
         {"application/json", "Application/JSON", "application/json; charset=utf-8",
          "application/json;charset=UTF-8", "application/json; charset=\"utf-8\"",
          " application/json ", "application/json; foo=bar"}) {
        EXPECT_TRUE(is_utf8_media_type(type, "application/json")) << type;
    }
}

TEST(MediaType, RejectsOtherTypesAndCharsets) {
    for (const char* type : {"", "text/json", "application/x-www-form-urlencoded", "text/plain",
                             "application/jsonx", "application/json-patch+json", "application/*",
                             "application/json; charset=latin1", "application/json; nonsense"}) {
        EXPECT_FALSE(is_utf8_media_type(type, "application/json")) << type;
    }
}

}  // namespace
}  // namespace plantstore::api
