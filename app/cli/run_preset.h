#pragma once
// Run presets: a split the Lab can open, written as a small JSON file. The ones the project
// ships live in assets/runs/ (one file a preset, named after it); `onegpu lab --preset NAME`
// opens one, `--preset FILE.json` any file of the same form.
//
// The format: one JSON object; every key optional, none other allowed.
//   "about"         text     one line saying what the preset shows
//   "model"         text     story, story8 or scale
//   "dp" "ep" "pp" "vstages" "microbatches" "batch" "seq" "workers" "seed" "zero"
//                   integers the `onegpu train` flags of the same name, with their bounds
//   "schedule"      text     gpipe, 1f1b, interleaved or zb1
//   "link"          text     nvlink, ib or pcie
// A key left out takes train's default (and fill_defaults() picks what a split needs).
// Every value is checked by the same rules as the flag it stands for, and the split by the
// plan's rules: a bad file is one line naming the file (trainer::Error), never a guess.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace onegpu::cli {

struct RunPreset {
  std::string name;                // the file's name without .json
  std::string about;
  std::vector<std::string> flags;  // as `onegpu train` takes them: {"--pp", "2", ...}
};

// Reads and checks one preset file. Throws trainer::Error with one line.
RunPreset read_run_preset(const std::filesystem::path& file);
// The same for a file's text; `where` starts every message ("preset FILE").
RunPreset parse_run_preset(std::string_view text, const std::string& name, const std::string& where);
// NAME (a file in presets_dir()) or a path to a file (it has a '/' or ends in .json).
RunPreset load_run_preset(const std::string& name_or_file);

// Where the shipped presets are: assets_dir()/runs (asset_files.h).
std::filesystem::path presets_dir();
// The shipped presets' names, sorted.
std::vector<std::string> preset_names();

}  // namespace onegpu::cli
