#include "status.h"

#include <gtest/gtest.h>

namespace conveyor {
namespace {

StatusOr<int> Half(int v) {
  if (v % 2) return InvalidArgument("odd value " + std::to_string(v));
  return v / 2;
}

Status Chain(int v, int* out) {
  ASSIGN_OR_RETURN(*out, Half(v));
  RETURN_IF_ERROR(v > 100 ? ResourceExhausted("too big") : OkStatus());
  return OkStatus();
}

TEST(Status, CarriesCodeMessageAndContext) {
  const Status s = InvalidArgument("quality 0 is out of range").WithContext("rendition 1");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT: rendition 1: quality 0 is out of range");
  EXPECT_TRUE(OkStatus().WithContext("x").ok());
}

TEST(Status, MacrosPropagate) {
  int out = 0;
  EXPECT_TRUE(Chain(8, &out).ok());
  EXPECT_EQ(out, 4);
  EXPECT_EQ(Chain(7, &out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Chain(200, &out).code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace conveyor
