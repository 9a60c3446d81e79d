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

}  // namespace gridrun::jobs
