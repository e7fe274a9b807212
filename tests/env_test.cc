// The environment registry is the one list of Conflux's variables; the README documents each.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/env.h"
#include "common/error.h"

namespace conflux::env {
namespace {

TEST(Env, ReadmeDocumentsEveryVariable) {
  std::ifstream in(CFX_README_PATH);
  ASSERT_TRUE(in.good()) << CFX_README_PATH;
  std::stringstream ss;
  ss << in.rdbuf();
  for (const auto& v : registry()) {
    EXPECT_NE(ss.str().find(std::string("`") + v.name + "`"), std::string::npos) << v.name << " is not in README.md";
  }
}

TEST(Env, DefaultsParseAndBadValuesAreClear) {
  for (const auto& v : registry()) {
    if (v.defaultValue == nullptr) continue;
    EXPECT_TRUE(get(v.name).has_value());
  }
  setenv("CFX_TIMEOUT", "soon", 1);
  try {
    getDouble("CFX_TIMEOUT");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("CFX_TIMEOUT='soon'"), std::string::npos);
  }
  unsetenv("CFX_TIMEOUT");
  EXPECT_THROW(get("CFX_NOT_REGISTERED"), Error);
}

}  // namespace
}  // namespace conflux::env
