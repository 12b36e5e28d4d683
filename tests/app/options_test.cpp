#include <gtest/gtest.h>

#include <algorithm>

#include "app/options.h"
#include "app/ui/key_commands.h"

using namespace onegpu::app;

static Options parse(std::vector<std::string> a) { return parse_options(a); }

TEST(Options, DefaultsOpenTheWindowOnTheFirstChapter) {
  Options o = parse({});
  EXPECT_FALSE(o.headless);
  EXPECT_TRUE(o.chapter.empty());
  EXPECT_FALSE(o.at.has_value());
}

TEST(Options, HeadlessRender) {
  Options o = parse({"--headless", "--chapter", "gpu", "--out", "x.png", "--size", "640x360", "--at", "1.5"});
  EXPECT_TRUE(o.headless);
  EXPECT_EQ(o.chapter, "gpu");
  EXPECT_EQ(o.out, "x.png");
  EXPECT_EQ(o.width, 640);
  EXPECT_EQ(o.height, 360);
  ASSERT_TRUE(o.at.has_value());
  EXPECT_FLOAT_EQ(*o.at, 1.5f);
  EXPECT_FALSE(parse({"--headless", "--out", "x.png", "--at", "end"}).at.has_value());
}

TEST(Options, BadInputIsOneClearError) {
  auto message = [](std::vector<std::string> a) {
    try {
      parse_options(a);
    } catch (const OptionsError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({"--size", "big"}).find("--size must look like"), std::string::npos);
  EXPECT_NE(message({"--size", "0x100"}).find("between 64x64"), std::string::npos);
  EXPECT_NE(message({"--size", "100xabc"}).find("whole number"), std::string::npos);
  EXPECT_NE(message({"--size", "99999x100"}).find("between"), std::string::npos);
  EXPECT_NE(message({"--at", "-1"}).find("--at"), std::string::npos);
  EXPECT_NE(message({"--at", "soon"}).find("must be a number"), std::string::npos);
  EXPECT_NE(message({"--headless"}).find("needs --out"), std::string::npos);
  EXPECT_NE(message({"--out", "a.png"}).find("--headless"), std::string::npos);
  EXPECT_NE(message({"--chapter"}).find("needs a value"), std::string::npos);
  EXPECT_NE(message({"--bogus"}).find("unknown option '--bogus'"), std::string::npos);
  EXPECT_NE(message({"--ui-scale", "9"}).find("between 0.5 and 4"), std::string::npos);
  EXPECT_NE(message({"--frames", "0"}).find("at least 1"), std::string::npos);
}

TEST(Options, SplitFlagsAfterAChapterPointToTheLab) {
  // Chapters replay recorded runs; the split flags of `onegpu train` are answered with the
  // live command, carrying the user's flags over.
  try {
    parse_options({"--chapter", "wait", "--pp", "2", "--schedule", "zb1"});
    FAIL() << "no error";
  } catch (const OptionsError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("chapters play recorded runs"), std::string::npos) << m;
    EXPECT_NE(m.find("onegpu lab --pp 2 --schedule zb1"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  EXPECT_THROW(parse_options({"--chapter", "wait", "--dp"}), OptionsError);  // still needs its value
}

TEST(Options, UsageNamesEveryMode) {
  std::string u = usage();
  for (const char* s : {"--list-chapters", "--headless", "--chapter", "--out", "--size", "--at", "F11", "Esc"})
    EXPECT_NE(u.find(s), std::string::npos) << s;
}

// --help's keys come from the tables the window presses keys through: every row is there.
TEST(Options, UsageListsEveryKeyTheWindowTakes) {
  const std::string u = usage();
  auto has = [&](const char* keys, const char* does) {
    if (!*keys) return;
    EXPECT_NE(u.find(keys), std::string::npos) << keys;
    EXPECT_NE(u.find(does), std::string::npos) << does;
  };
  for (const KeyRow& r : story_keys()) has(r.keys, r.does);
  for (const LabKeyRow& r : lab_keys()) has(r.keys, r.does);
  has(lab_leave_key().keys, lab_leave_key().does);
  EXPECT_NE(u.find("Ctrl+S"), std::string::npos);  // the row the hand-written list had left out
}

TEST(Options, LabReplayCompareAndVideo) {
  // lab --open: a recorded run, not a run of the Lab's own.
  Options o = parse({"--lab", "--open", "run.json", "--scrub", "0.25", "--tab", "ledger"});
  EXPECT_EQ(o.view, "run.json");
  EXPECT_FALSE(o.lab);
  ASSERT_TRUE(o.scrub.has_value());
  EXPECT_DOUBLE_EQ(*o.scrub, 0.25);
  EXPECT_EQ(o.tab, "ledger");
  o = parse({"--headless", "--lab", "--pp", "2", "--steps", "2", "--compare", "--schedule gpipe  --ep 1", "--out", "c.png"});
  EXPECT_EQ(o.compare, (std::vector<std::string>{"--schedule", "gpipe", "--ep", "1"}));
  o = parse({"--headless", "--chapter", "all", "--video", "s.mp4", "--fps", "12", "--seconds", "2"});
  EXPECT_EQ(o.video, "s.mp4");
  EXPECT_EQ(o.fps, 12);
  EXPECT_DOUBLE_EQ(o.seconds, 2.0);
  auto message = [](std::vector<std::string> a) {
    try {
      parse_options(a);
    } catch (const OptionsError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({"--lab", "--open", "r.json", "--dp", "2"}).find("without train flags"), std::string::npos);
  EXPECT_NE(message({"--lab", "--scrub", "1.5"}).find("from 0 to 1"), std::string::npos);
  EXPECT_NE(message({"--scrub", "0.5"}).find("for the Lab"), std::string::npos);
  EXPECT_NE(message({"--lab", "--tab", "bogus"}).find("--tab must be one of"), std::string::npos);
  EXPECT_NE(message({"--chapter", "gpu", "--video", "v.mp4"}).find("add --headless"), std::string::npos);
  EXPECT_NE(message({"--headless", "--video", "v.mp4", "--out", "x.png"}).find("not both"), std::string::npos);
  EXPECT_NE(message({"--headless", "--chapter", "all", "--out", "x.png"}).find("is for --video"), std::string::npos);
  EXPECT_NE(message({"--headless", "--video", "v.mp4", "--fps", "0"}).find("between 1 and 120"), std::string::npos);
}

TEST(Options, TrainFlagsReachTheLabAsTyped) {
  // The Lab takes every `onegpu train` flag (but --save and --resume), in the order typed;
  // --steps is the Lab's own only in a headless render.
  Options o = parse({"--lab", "--pp", "2", "--quiet", "--model=story8", "--steps", "7"});
  EXPECT_EQ(o.lab_args, (std::vector<std::string>{"--pp", "2", "--quiet", "--model", "story8", "--steps", "7"}));
  EXPECT_EQ(o.lab_steps, 0);
  o = parse({"--headless", "--lab", "--steps", "3", "--out", "x.png", "--dp", "2"});
  EXPECT_EQ(o.lab_steps, 3);
  EXPECT_EQ(o.lab_args, (std::vector<std::string>{"--dp", "2"}));
  auto message = [](std::vector<std::string> a) {
    try {
      parse_options(a);
    } catch (const OptionsError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({"--lab", "--save", "x.st"}), "unknown option '--save' (see onegpu --help)");
  EXPECT_EQ(message({"--model", "story8"}), "unknown option '--model' (see onegpu --help)");
  EXPECT_EQ(message({"--play"}), "unknown option '--play' (see onegpu --help)");
  EXPECT_EQ(message({"--lab", "--dp"}), "--dp needs a value (see onegpu --help)");
  EXPECT_EQ(message({"--chapter", ""}), "--chapter needs a value, got an empty one");
  EXPECT_EQ(message({"stray"}), "unknown option 'stray' (see onegpu --help)");
  // The last of a repeated flag wins; --help wins over everything else.
  EXPECT_EQ(parse({"--chapter", "gpu", "--chapter", "open"}).chapter, "open");
  EXPECT_TRUE(parse({"--size", "huge", "--help"}).help);
}

TEST(Options, PresetFlagsComeFirstSoTypedFlagsWin) {
  Options o = parse({"--lab", "--preset", "stages", "--dp", "1"});
  ASSERT_GE(o.lab_args.size(), 4u);
  EXPECT_EQ(o.lab_args[o.lab_args.size() - 2], "--dp");
  EXPECT_EQ(o.lab_args.back(), "1");
  EXPECT_NE(std::find(o.lab_args.begin(), o.lab_args.end(), "story8"), o.lab_args.end());
  EXPECT_THROW(parse_options({"--lab", "--preset", "no-such-preset"}), OptionsError);
  EXPECT_THROW(parse_options({"--lab", "--open", "r.json", "--preset", "stages"}), OptionsError);  // a replay trains nothing
}

TEST(Options, HelpListsEveryFlagFromTheParser) {
  const std::string u = usage();
  for (const char* s : {"--preset NAME|FILE", "--compare 'SPLIT FLAGS'", "--ui-scale X", "Train flags, for the Lab",
                        "--schedule NAME", "--zero 0|1"})
    EXPECT_NE(u.find(s), std::string::npos) << s;
  EXPECT_EQ(u.find("--save CKPT"), std::string::npos) << "the Lab keeps no checkpoints";
}
