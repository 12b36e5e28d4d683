#include "app/cli/run_preset.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "app/cli/asset_files.h"
#include "app/cli/train_command.h"
#include "trainer/error.h"
#include "trainer/io/json.h"
#include "trainer/io/text.h"
#include "trainer/model/config.h"
#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::cli {

namespace fs = std::filesystem;
using trainer::Error;
namespace text = trainer::text;

namespace {

// The keys a preset may hold: each an `onegpu train` flag of the same name.
constexpr const char* kTextKeys[] = {"model", "schedule", "link"};
constexpr const char* kIntegerKeys[] = {"dp", "ep", "pp", "vstages", "microbatches", "batch", "seq", "workers", "seed", "zero"};
constexpr std::size_t kMaxPresetBytes = 64 << 10;  // a preset is a few lines

bool one_of(const std::string& k, const auto& keys) {
  return std::find_if(std::begin(keys), std::end(keys), [&](const char* x) { return k == x; }) != std::end(keys);
}

std::string known_keys() {
  std::string s = "about";
  for (const char* k : kTextKeys) s += std::string(", ") + k;
  for (const char* k : kIntegerKeys) s += std::string(", ") + k;
  return s;
}

}  // namespace

RunPreset read_run_preset(const fs::path& file) {
  const std::string where = "preset " + text::printable(file.string());
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) throw Error(where + ": no such file");
  if (fs::file_size(file, ec) > kMaxPresetBytes) throw Error(where + ": larger than 64 KB; a preset is a few lines");
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) throw Error(where + ": cannot read it");
  return parse_run_preset(ss.str(), file.stem().string(), where);
}

RunPreset parse_run_preset(std::string_view body, const std::string& name, const std::string& where) {
  trainer::json::Value v;
  try {
    v = trainer::json::parse(body, 8);
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  if (!v.is_object()) throw Error(where + ": must be one JSON object, like {\"pp\": 2, \"dp\": 2}");
  RunPreset p;
  p.name = name;
  for (const auto& [key, value] : v.as_object()) {
    const std::string k = text::printable(key);
    if (key == "about") {
      if (!value.is_string()) throw Error(where + ": 'about' must be text");
      p.about = value.as_string();
    } else if (one_of(key, kTextKeys)) {
      if (!value.is_string()) throw Error(where + ": '" + k + "' must be text, like \"" + k + "\": \"...\"");
      p.flags.insert(p.flags.end(), {"--" + key, value.as_string()});
    } else if (one_of(key, kIntegerKeys)) {
      if (!value.is_integer()) throw Error(where + ": '" + k + "' must be a whole number");
      p.flags.insert(p.flags.end(), {"--" + key, std::to_string(value.as_int())});
    } else {
      throw Error(where + ": unknown key '" + k + "' (a preset may hold " + known_keys() + ")");
    }
  }
  // The values by the flags' own rules, then the split by the plan's: the same one line as
  // `onegpu train` would print, naming the file.
  try {
    TrainArgs a = parse_train_args(p.flags);
    fill_defaults(a);
    trainer::parallel_run_config(trainer::model_preset(a.model), parallel_options(a));
  } catch (const std::exception& e) {
    throw Error(where + ": " + e.what());
  }
  return p;
}

fs::path presets_dir() { return assets_dir() / "runs"; }

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(presets_dir(), ec))
    if (e.path().extension() == ".json" && e.is_regular_file(ec)) names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

RunPreset load_run_preset(const std::string& name_or_file) {
  if (name_or_file.empty()) throw Error("--preset needs a value, got an empty one");
  const bool is_path = name_or_file.find('/') != std::string::npos ||
                       (name_or_file.size() > 5 && name_or_file.ends_with(".json"));
  if (is_path) return read_run_preset(name_or_file);
  const fs::path f = presets_dir() / (name_or_file + ".json");
  std::error_code ec;
  if (!fs::is_regular_file(f, ec)) {
    std::string names;
    for (const auto& n : preset_names()) names += (names.empty() ? "" : ", ") + n;
    throw Error("unknown preset '" + text::printable(name_or_file) + "'; presets: " +
                (names.empty() ? "none found in " + presets_dir().string() : names));
  }
  return read_run_preset(f);
}

}  // namespace onegpu::cli
