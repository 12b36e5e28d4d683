#include "trainer/data/corpus.h"

#include "trainer/train/limits.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace onegpu::trainer {

std::size_t Corpus::train_bytes() const {
  std::size_t n = 0;
  for (const auto& d : train) n += d.size();
  return n;
}

std::size_t Corpus::heldout_bytes() const {
  std::size_t n = 0;
  for (const auto& d : heldout) n += d.size();
  return n;
}

std::optional<std::size_t> first_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    std::uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return i;  // continuation byte, overlong 2-byte lead (C0/C1) or F5..FF
    }
    if (i + len > n) return i;
    for (std::size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += len;
  }
  return std::nullopt;
}

namespace {

bool blank_line(std::string_view line) {
  for (char c : line)
    if (c != ' ' && c != '\t' && c != '\r') return false;
  return true;
}

}  // namespace

std::vector<std::string> split_documents(std::string_view text) {
  std::vector<std::string> docs;
  std::size_t doc_begin = std::string_view::npos;  // first byte of the current document
  std::size_t doc_end = 0;                         // end of its last non-blank line
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::size_t line_end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(pos, line_end - pos);
    if (blank_line(line)) {
      if (doc_begin != std::string_view::npos) {
        docs.emplace_back(text.substr(doc_begin, doc_end - doc_begin));
        doc_begin = std::string_view::npos;
      }
    } else {
      if (doc_begin == std::string_view::npos) doc_begin = pos;
      doc_end = line_end;
    }
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
  }
  if (doc_begin != std::string_view::npos) docs.emplace_back(text.substr(doc_begin, doc_end - doc_begin));
  return docs;
}

namespace {

// Cuts one document in two near byte `target`: at a line break within a tenth of the text
// from the target if there is one, else at a space, else at the nearest UTF-8 character
// boundary. Returns 0 when no cut leaves both parts non-empty.
std::size_t cut_point(std::string_view s, std::size_t target) {
  auto dist = [&](std::size_t i) { return i > target ? i - target : target - i; };
  const std::size_t window = s.size() / 10;
  for (char want : {'\n', ' '}) {
    std::size_t best = 0;
    for (std::size_t i = 0; i + 1 < s.size(); ++i)
      if (s[i] == want && dist(i + 1) <= window && (best == 0 || dist(i + 1) < dist(best))) best = i + 1;
    if (best != 0) return best;
  }
  std::size_t best = 0;
  for (std::size_t i = 1; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && (best == 0 || dist(i) < dist(best))) best = i;
  return best;
}

}  // namespace

Corpus split_heldout(std::vector<std::string> documents, double heldout_fraction) {
  if (!(heldout_fraction > 0.0 && heldout_fraction < 1.0))
    throw Error("held-out fraction must be between 0 and 1, got " + std::to_string(heldout_fraction));
  Corpus c;
  if (documents.empty()) throw Error("corpus has no text");
  if (documents.size() == 1) {
    std::string& d = documents[0];
    std::size_t target = static_cast<std::size_t>(std::llround(d.size() * (1.0 - heldout_fraction)));
    if (target >= d.size()) target = d.size() - 1;
    std::size_t cut = cut_point(d, target);
    if (cut == 0)
      throw Error("corpus is too small to hold some of it out (" + std::to_string(d.size()) + " bytes)");
    c.train.push_back(d.substr(0, cut));
    c.heldout.push_back(d.substr(cut));
    return c;
  }
  // Document i is held out when the running count floor((i+1)·f) steps up: spread evenly.
  const std::size_t n = documents.size();
  for (std::size_t i = 0; i < n; ++i) {
    const auto before = static_cast<std::size_t>(std::floor(i * heldout_fraction));
    const auto after = static_cast<std::size_t>(std::floor((i + 1) * heldout_fraction));
    (after > before ? c.heldout : c.train).push_back(std::move(documents[i]));
  }
  // At least one document on each side.
  if (c.heldout.empty()) {
    c.heldout.push_back(std::move(c.train.back()));
    c.train.pop_back();
  } else if (c.train.empty()) {
    c.train.push_back(std::move(c.heldout.front()));
    c.heldout.erase(c.heldout.begin());
  }
  return c;
}

Corpus load_text_corpus(const std::string& path, double heldout_fraction) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error("cannot open corpus " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error("corpus " + path + " is not a regular file");
  // The text, its documents and its tokens are all held in memory, several times its size.
  limits::require_memory(8 * static_cast<std::uint64_t>(st.st_size),
                         "corpus " + path + " (" + limits::bytes_text(static_cast<std::uint64_t>(st.st_size)) + ")",
                         "use a smaller --corpus");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open corpus " + path + ": " + std::strerror(errno));
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (static_cast<std::size_t>(in.gcount()) != text.size())
    throw Error("cannot read all of corpus " + path);
  if (text.empty()) throw Error("corpus " + path + " is empty");
  if (auto bad = first_invalid_utf8(text)) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(text[*bad]));
    throw Error("corpus " + path + " is not UTF-8: invalid byte " + hex + " at offset " +
                std::to_string(*bad));
  }
  std::string_view body = text;
  if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);  // byte-order mark
  std::vector<std::string> docs = split_documents(body);
  if (docs.empty()) throw Error("corpus " + path + " holds only whitespace");
  try {
    return split_heldout(std::move(docs), heldout_fraction);
  } catch (const Error& e) {
    throw Error("corpus " + path + ": " + e.what());
  }
}

}  // namespace onegpu::trainer
