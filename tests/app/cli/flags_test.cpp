// app/cli/flags.h: CLI11 under our rules. Each message here is one a user sees.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/cli/flags.h"
#include "app/cli/train_command.h"
#include "trainer/error.h"

using onegpu::cli::Flags;
using onegpu::trainer::Error;

namespace {

struct Parsed {
  int steps = 7;
  std::string log;
  bool quiet = false;
};

std::string flags_error_of(std::vector<std::string> args, bool words_are_options = false) {
  Parsed p;
  Flags f("onegpu test", "a test command");
  f.errors(words_are_options ? " (see onegpu --help)" : "", words_are_options);
  f.integer("--steps", "N", "steps", p.steps, 1, 100);
  f.text("--log", "FILE", "a log", p.log);
  f.flag("--quiet", "no progress", p.quiet);
  try {
    f.parse(args);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(Flags, ValuesFlagsAndTheLastOfARepeatedFlag) {
  Parsed p;
  Flags f("onegpu test", "");
  f.integer("--steps", "N", "steps", p.steps, 1, 100);
  f.text("--log", "FILE", "a log", p.log);
  f.flag("--quiet", "no progress", p.quiet);
  ASSERT_TRUE(f.parse({"--steps", "5", "--quiet", "--log", "x.jsonl", "--steps", "9"}));
  EXPECT_EQ(p.steps, 9);
  EXPECT_EQ(p.log, "x.jsonl");
  EXPECT_TRUE(p.quiet);
  EXPECT_TRUE(f.given("--log"));
  EXPECT_FALSE(f.given("--nope"));
  const auto order = f.in_order();
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[0], (std::pair<std::string, std::string>{"--steps", "5"}));
  EXPECT_EQ(order[1], (std::pair<std::string, std::string>{"--quiet", ""}));
  EXPECT_EQ(order[3], (std::pair<std::string, std::string>{"--steps", "9"}));
  EXPECT_TRUE(f.takes_value("--log"));
  EXPECT_FALSE(f.takes_value("--quiet"));
}

TEST(Flags, BadInputIsOneLineInOurWords) {
  EXPECT_EQ(flags_error_of({"--frobnicate", "1"}), "unknown option '--frobnicate'");
  EXPECT_EQ(flags_error_of({"stray"}), "unexpected argument 'stray'");
  EXPECT_EQ(flags_error_of({"stray"}, true), "unknown option 'stray' (see onegpu --help)");
  EXPECT_EQ(flags_error_of({"--steps"}), "--steps needs a value");
  EXPECT_EQ(flags_error_of({"--log", ""}), "--log needs a value, got an empty one");
  EXPECT_EQ(flags_error_of({"--steps", " 5"}), "--steps expects a whole number (digits only), got ' 5'");
  EXPECT_EQ(flags_error_of({"--steps", "+5"}), "--steps expects a whole number (digits only), got '+5'");
  EXPECT_EQ(flags_error_of({"--steps", "4294967297"}), "--steps must be between 1 and 100, got 4294967297");
  EXPECT_EQ(flags_error_of({"--steps", "-3"}), "--steps must be between 1 and 100, got -3");
  // A value that looks like a flag is still the value of the flag before it.
  EXPECT_EQ(flags_error_of({"--log", "--quiet"}), "no error");
  // The first bad value typed is the one reported.
  EXPECT_EQ(flags_error_of({"--steps", "0", "--log", ""}), "--steps must be between 1 and 100, got 0");
  EXPECT_EQ(flags_error_of({"--log", "", "--steps", "0"}), "--log needs a value, got an empty one");
  // Terminal escapes in a typed word come back escaped.
  EXPECT_EQ(flags_error_of({"--\x1b[31m"}), "unknown option '--\\x1b[31m'");
}

TEST(Flags, HelpIsGeneratedFromTheFlags) {
  Parsed p;
  Flags f("onegpu test", "a test command");
  f.integer("--steps", "N", "steps to run", p.steps, 1, 100);
  f.footer("More words after the flags.");
  EXPECT_FALSE(f.parse({"--help"}));
  EXPECT_FALSE(f.parse({"-h"}));
  const std::string h = f.help();
  for (const char* s : {"onegpu test", "a test command", "--steps N", "steps to run", "More words after the flags."})
    EXPECT_NE(h.find(s), std::string::npos) << s << "\n" << h;
}

TEST(Flags, TheTrainFlagsAreOneList) {
  // The Lab takes `onegpu train`'s flags from add_train_flags(): every one is listed, with
  // whether it takes a value.
  onegpu::cli::TrainArgs a;
  Flags f("onegpu train", "");
  onegpu::cli::add_train_flags(f, a);
  bool steps = false, quiet = false;
  for (const auto& [name, takes_value] : f.names()) {
    if (name == "--steps") steps = takes_value;
    if (name == "--quiet") quiet = !takes_value;
    EXPECT_EQ(name.rfind("--", 0), 0u) << name;
  }
  EXPECT_TRUE(steps);
  EXPECT_TRUE(quiet);
  EXPECT_GE(f.names().size(), 23u);
}
