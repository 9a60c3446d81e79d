// Self-checking JSON files: state.json, calibration.json and prediction.json (issue 45).
//
// Why: a flipped bit that still parses must be a detected damage, never a silently different
// figure (a phase's time, a step time, a prediction). The writer appends a last member
// "checksum": "sha256:HEX", the SHA-256 of every byte before that member, so a reader checks the
// bytes as written: no re-serialisation, whose spelling of numbers could differ between versions.
// The file stays plain JSON for people and other tools; one edited by hand is accepted once its
// "checksum" line is deleted (the message says so).
#pragma once

#include <string>
#include <string_view>

#include "gridrun/base/json.hpp"

namespace gridrun::base {

// `object` (a JSON object) as Json::dump(indent) with the checksum member last, and a newline.
std::string checked_json_text(const Json& object, int indent);

// Parses `text` and checks its checksum; the "checksum" member is removed from the result.
// Throws std::runtime_error "ORIGIN: damaged: ..." when the bytes do not match their checksum or
// the checksum member itself is damaged, and as parse_json on malformed JSON. A file without any
// checksum (written before gridrun had them, or edited by hand) is accepted: `*checked` (when
// given) says which it was.
Json parse_checked_json(std::string_view text, const std::string& origin, bool* checked = nullptr,
                        const JsonParseOptions& opts = {});

// read_file (with the rules of `kind`: fs.hpp) + parse_checked_json(..., path).
struct FileKind;
Json read_checked_json_file(const std::string& path, const FileKind& kind);

}  // namespace gridrun::base
