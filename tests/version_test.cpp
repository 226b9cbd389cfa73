// The library reports the version its header declares (a program compiled
// with one header and run against another library would see them differ).
#include <gtest/gtest.h>

#include <string>

#include "gelu/gelu.hpp"

TEST(Version, LibraryMatchesHeader) {
  const std::string parts = std::to_string(GELU_FUSION_VERSION_MAJOR) + "." +
                            std::to_string(GELU_FUSION_VERSION_MINOR) + "." +
                            std::to_string(GELU_FUSION_VERSION_PATCH);
  EXPECT_EQ(parts, GELU_FUSION_VERSION_STRING);
  EXPECT_EQ(std::string(gelu::version()), GELU_FUSION_VERSION_STRING);
  EXPECT_EQ(GELU_FUSION_VERSION, GELU_FUSION_VERSION_MAJOR * 10000 +
                                     GELU_FUSION_VERSION_MINOR * 100 +
                                     GELU_FUSION_VERSION_PATCH);
}
