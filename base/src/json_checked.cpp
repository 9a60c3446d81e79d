// See json_checked.hpp.
#include "gridrun/base/json_checked.hpp"

#include <algorithm>
#include <stdexcept>

#include "gridrun/base/fs.hpp"
#include "gridrun/base/sha256.hpp"

namespace gridrun::base {

namespace {
constexpr std::string_view kChecksumKey = "\"checksum\": \"sha256:";
constexpr std::string_view kChecksumEnd = "\"\n}\n";
constexpr std::size_t kHexDigits = 64;
constexpr std::string_view kHandEdit = " (edited by hand? delete its \"checksum\" line to accept the edit)";
}  // namespace

std::string checked_json_text(const Json& object, int indent) {
  if (!object.is_object()) throw std::logic_error("checked_json_text: not a JSON object");
  std::string text = object.dump(indent, ' ', false, Json::error_handler_t::replace);
  // "{...\n}" (or "{}" when empty): the checksum goes in as the last member, on its own line.
  const std::string pad(static_cast<std::size_t>(std::max(indent, 0)), ' ');
  if (object.empty()) {
    text = "{\n" + pad;
  } else {
    text.pop_back();  // the object's own '}'
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    text += ",\n" + pad;
  }
  const std::string digest = sha256_hex(text.data(), text.size());
  text.append(kChecksumKey).append(digest).append(kChecksumEnd);
  return text;
}

Json parse_checked_json(std::string_view text, const std::string& origin, bool* checked,
                        const JsonParseOptions& opts) {
  if (checked) *checked = false;
  const std::size_t at = text.rfind(kChecksumKey);
  const bool whole = at != std::string_view::npos &&
                     text.size() == at + kChecksumKey.size() + kHexDigits + kChecksumEnd.size() &&
                     text.substr(at + kChecksumKey.size() + kHexDigits) == kChecksumEnd;
  if (!whole) {
    // No checksum at all: a file from before gridrun wrote them. But a damaged checksum member
    // (its key, its prefix or the file's end flipped) leaves a trace in the file's last bytes.
    const std::string_view tail = text.substr(text.size() > 160 ? text.size() - 160 : 0);
    if (tail.find("checksum") != std::string_view::npos || tail.find("sha256:") != std::string_view::npos)
      throw std::runtime_error(origin + ": damaged: its checksum line is not intact" +
                               std::string(kHandEdit));
    return parse_json(text, origin, opts);
  }
  const std::string_view hex = text.substr(at + kChecksumKey.size(), kHexDigits);
  if (sha256_hex(text.data(), at) != hex)
    throw std::runtime_error(origin + ": damaged: its bytes do not match their SHA-256 checksum" +
                             std::string(kHandEdit));
  Json value = parse_json(text, origin, opts);
  if (value.is_object()) value.erase("checksum");
  if (checked) *checked = true;
  return value;
}

Json read_checked_json_file(const std::string& path, const FileKind& kind) {
  return parse_checked_json(read_file(path, kind), path);
}

}  // namespace gridrun::base
