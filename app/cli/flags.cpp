#include "app/cli/flags.h"

#include <map>

#include "trainer/error.h"
#include "trainer/io/text.h"

namespace onegpu::cli {

using trainer::Error;
namespace text = trainer::text;

namespace {

// The flag's name as typed ("--steps"). Not get_name(): it answers "" for a flag hidden from help.
std::string name_of(const CLI::Option* o) {
  if (!o->get_lnames().empty()) return "--" + o->get_lnames().front();
  return o->get_snames().empty() ? std::string() : "-" + o->get_snames().front();
}

}  // namespace

Flags::Flags(std::string command, std::string about) : app_(std::move(about), std::move(command)) {
  app_.allow_extras();  // unknown flags are reported by parse(), in our words
  app_.set_help_flag("-h,--help", "show these flags and exit");
  app_.get_formatter()->column_width(28);
}

CLI::Option* Flags::add(const std::string& name, const std::string& type, const std::string& help,
                        std::function<void(const std::string&)> set) {
  CLI::Option* o = type.empty() ? app_.add_flag(name, help) : app_.add_option(name, help)->type_name(type);
  // Every value is kept as typed; the setters below run once per occurrence, so the last wins.
  o->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sets_.emplace_back(o, std::move(set));
  return o;
}

CLI::Option* Flags::value(const std::string& name, const std::string& type, const std::string& help,
                          std::function<void(const std::string&)> set) {
  return add(name, type, help, [name, set = std::move(set)](const std::string& v) {
    // An empty value is never what a user means (--resume '' would start a fresh run).
    if (v.empty()) throw Error(name + " needs a value, got an empty one");
    set(v);
  });
}

CLI::Option* Flags::text(const std::string& name, const std::string& type, const std::string& help,
                         std::string& into) {
  return value(name, type, help, [&into](const std::string& v) { into = v; });
}

CLI::Option* Flags::integer(const std::string& name, const std::string& type, const std::string& help, int& into,
                            long long lo, long long hi) {
  return value(name, type, help, [&into, name, lo, hi](const std::string& v) {
    into = static_cast<int>(text::int_flag(name, v, lo, hi));
  });
}

CLI::Option* Flags::u64(const std::string& name, const std::string& type, const std::string& help,
                        std::uint64_t& into) {
  return value(name, type, help, [&into, name](const std::string& v) { into = text::u64_flag(name, v); });
}

CLI::Option* Flags::flag(const std::string& name, const std::string& help, bool& into) {
  return add(name, "", help, [&into](const std::string&) { into = true; });
}

std::vector<std::string> Flags::take_unchecked(const Flags& other, const std::function<bool(const std::string&)>& keep,
                                             const std::string& group) {
  std::vector<std::string> taken;
  for (const auto& [o, set] : other.sets_) {
    const std::string name = name_of(o);
    if (!keep(name)) continue;
    const bool takes_value = o->get_expected_max() != 0;
    add(name, takes_value ? o->get_type_name() : "", o->get_description(), [](const std::string&) {})->group(group);
    taken.push_back(name);
  }
  return taken;
}

bool Flags::takes_value(const std::string& name) const {
  const CLI::Option* o = app_.get_option_no_throw(name);
  return o && o->get_expected_max() != 0;
}

void Flags::footer(const std::string& t) { app_.footer(t); }

bool Flags::parse(const std::vector<std::string>& args) {
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
    app_.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return false;
  } catch (const CLI::ArgumentMismatch& e) {
    // "--steps: 1 required N missing": the flag came last, with no value after it.
    const std::string m = e.what();
    throw Error(m.substr(0, m.find(':')) + " needs a value" + hint_);
  } catch (const CLI::ParseError& e) {
    std::string m = e.what();
    for (char& c : m)
      if (c == '\n') c = ' ';
    throw Error(text::printable(m));
  }
  const std::vector<std::string> extra = app_.remaining();
  if (!extra.empty()) {
    const std::string& w = extra.front();
    if (words_are_options_ || w.rfind('-', 0) == 0) throw Error("unknown option '" + text::printable(w) + "'" + hint_);
    throw Error("unexpected argument '" + text::printable(w) + "'");
  }
  // The values are checked in the order they were typed, so the first bad one is reported.
  std::map<const CLI::Option*, std::size_t> seen;
  for (const CLI::Option* o : app_.parse_order()) {
    const std::size_t i = seen[o]++;
    for (auto& [opt, set] : sets_)
      if (opt == o) set(o->get_expected_max() == 0 ? std::string() : o->results().at(i));
  }
  return true;
}

bool Flags::given(const std::string& name) const {
  const CLI::Option* o = app_.get_option_no_throw(name);
  return o && o->count() > 0;
}

std::vector<std::pair<std::string, std::string>> Flags::in_order() const {
  std::vector<std::pair<std::string, std::string>> out;
  std::map<const CLI::Option*, std::size_t> seen;
  for (const CLI::Option* o : app_.parse_order()) {
    const std::size_t i = seen[o]++;
    out.emplace_back(name_of(o), o->get_expected_max() == 0 ? std::string() : o->results().at(i));
  }
  return out;
}

std::vector<std::pair<std::string, bool>> Flags::names() const {
  std::vector<std::pair<std::string, bool>> out;
  for (const auto& [o, set] : sets_) out.emplace_back(name_of(o), o->get_expected_max() != 0);
  return out;
}

std::string Flags::help() const { return app_.help(); }

}  // namespace onegpu::cli
