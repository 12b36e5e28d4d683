#pragma once
// One command's flags, parsed by CLI11 with onegpu's rules on top. Every command line of the
// program (`onegpu train`, `predict`, `sample`, and the window's own options) is one Flags.
//
// Use:
//   Flags f("onegpu train", "Trains the tiny model ...");
//   f.integer("--steps", "N", "steps to train", a.steps, 1, limits::kMaxSteps);
//   f.text("--log", "FILE.jsonl", "one JSON line a step", a.log);
//   if (!f.parse(args)) { print f.help(); return 0; }   // false: --help was asked
//
// What it adds to CLI11:
//   - Values are checked by our own functions (trainer/io/text.h: digits only, bounds checked
//     before narrowing, no empty values), so messages read the same in every command.
//   - Bad input is one line in trainer::Error, never CLI11's own wording: an unknown flag is
//     "unknown option '--x'", a missing value "--x needs a value", a stray word
//     "unexpected argument 'x'".
//   - A flag given twice keeps the last value; given() and in_order() say what was typed.
// What it does not do: rules between flags (one flag needs another); the command checks those
// after parse(), where it can name both flags.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace onegpu::cli {

class Flags {
 public:
  Flags(std::string command, std::string about);

  // A flag with one value, handed to `set` as typed; `set` checks it and throws trainer::Error
  // (empty values are refused before `set` is called).
  CLI::Option* value(const std::string& name, const std::string& type, const std::string& help,
                     std::function<void(const std::string&)> set);
  CLI::Option* text(const std::string& name, const std::string& type, const std::string& help, std::string& into);
  CLI::Option* integer(const std::string& name, const std::string& type, const std::string& help, int& into,
                       long long lo, long long hi);
  CLI::Option* u64(const std::string& name, const std::string& type, const std::string& help, std::uint64_t& into);
  CLI::Option* flag(const std::string& name, const std::string& help, bool& into);
  // Takes the flags of `other` that `keep` names, as typed and unchecked (read them back with
  // in_order()), listed in --help under `group`; returns their names. The window takes train's
  // flags this way and hands them to train's own parser.
  std::vector<std::string> take_unchecked(const Flags& other, const std::function<bool(const std::string&)>& keep,
                                          const std::string& group);
  // Text after the options in --help.
  void footer(const std::string& text);

  // False when --help (or -h) was given: print help(). Throws trainer::Error with one line.
  bool parse(const std::vector<std::string>& args);

  bool given(const std::string& name) const;
  bool takes_value(const std::string& name) const;
  // The flags as typed, in command-line order: (name, value); value is "" for a flag.
  std::vector<std::pair<std::string, std::string>> in_order() const;
  // Every flag this command knows (but --help): (name, takes a value).
  std::vector<std::pair<std::string, bool>> names() const;
  std::string help() const;

  // How bad input reads: `hint` ends the "unknown option" and "needs a value" lines (for
  // example " (see onegpu --help)"); with words_are_options a stray word is an unknown option
  // too (the window's way), else "unexpected argument".
  void errors(std::string hint, bool words_are_options) {
    hint_ = std::move(hint);
    words_are_options_ = words_are_options;
  }

 private:
  CLI::Option* add(const std::string& name, const std::string& type, const std::string& help,
                   std::function<void(const std::string&)> set);
  CLI::App app_;
  std::vector<std::pair<CLI::Option*, std::function<void(const std::string&)>>> sets_;
  std::string hint_;
  bool words_are_options_ = false;
};

}  // namespace onegpu::cli
