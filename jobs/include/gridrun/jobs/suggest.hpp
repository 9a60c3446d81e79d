// "did you mean" for names typed by a person (parameters, filter keys, command names, flags): the
// one rule the grid loader's hints use, public so that the CLI's hints for commands and flags agree
// with them.
#pragma once

#include <string>
#include <vector>

namespace gridrun::jobs {

// The candidate closest to `word` in edits (about a third of its length at most; on a tie one that
// starts with `word`), else one containing it or contained in it; empty when none is close.
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates);

// "; did you mean '--epochs'?" for an unknown flag as a parser reports it (`--epoch` or
// `--epoch=3`) when one of `flags` (long names without "--"; empty ones are skipped) is close by
// closest_name; "" otherwise, and for a short flag. Both binaries' flag errors end with it.
std::string flag_hint(std::string typed, const std::vector<std::string>& flags);

}  // namespace gridrun::jobs
