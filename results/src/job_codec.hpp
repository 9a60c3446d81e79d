// A JobData as bytes: how the run reader's forked copy hands a decoded job file back to its
// parent, and what the results folder's index (.gridrun-index) keeps per file. Private to results/.
//
// Why a byte codec and not JSON: a run of 10,000 jobs moves 10,000 records through a pipe and
// through the index on every status; a length-prefixed binary layout decodes in microseconds and
// lets a reader stop at the depth it needs (a status never decodes parameters or tables).
// Layout: three sections, each prefixed by its byte length so a shallower reader skips the rest:
//   glance  (id, status, exit_reason, attempts)
//   summary (root attributes, the rest of the string members, /util's reason, /summary)
//   tables  (/steps, /epochs, /util, /profile): present only when encoded at Depth::Full
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gridrun/base/bytes.hpp"
#include "gridrun/results/format.hpp"

namespace gridrun::results::detail {

std::string encode_job(const JobData& job, Depth depth);
// Throws std::runtime_error on bytes that are not a whole encoding (a damaged index).
// `summary_keys` (FolderReadOptions::summary_keys): at Depth::Summary only those /summary figures,
// no attributes and no parameters.
JobData decode_job(std::string_view bytes, Depth depth,
                   const std::vector<std::string>* summary_keys = nullptr);

// The byte layout's reader and writer (base/bytes.hpp), shared with the index's own layout.
using base::ByteReader;
using base::ByteWriter;

}  // namespace gridrun::results::detail
