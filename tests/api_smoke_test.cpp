#include <gtest/gtest.h>
#include "gelu/gelu.hpp"
TEST(Smoke, Builds) { float x[3] = {-1, 0, 1}, y[3]; gelu::gelu({x, gelu::DType::f32, {3}}, {y, gelu::DType::f32, {3}}); EXPECT_NEAR(y[2], 0.8413447, 1e-6); }
