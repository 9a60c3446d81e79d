// Folders gridrun makes inside a run and later empties (a warm worker's pipe folder,
// runs/<name>/workers/w<N>; a TensorBoard run folder of `export`), made and emptied so that nothing
// outside them is ever touched.
//
// Why (issue 57): a `workers` link in a run folder made `run --launch warm` create its pipes through
// the link and then remove_all the target's w1/ and w2/, another user's or experiment's folders.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace gridrun::base {

// Makes `dir` unless it exists (its parent must exist), then checks that it is a folder of this
// user's own: lstat's, so a symbolic link in its place (even to a folder) is refused, as is a
// folder of another owner. Throws std::runtime_error naming it ("DIR: a symbolic link, not a
// folder of gridrun's own; refused").
void make_own_dir(const std::string& dir);

// Removes from the folder `dir` the entries whose names `owned` accepts and that are not folders,
// then `dir` itself when that left it empty. Never through a link: `dir`'s parent and `dir` are
// opened with O_NOFOLLOW | O_DIRECTORY (openat), and the entries removed with unlinkat on that
// descriptor, so a link put in place of either removes nothing. Best effort (a removal that fails
// is left); returns how many entries it removed.
std::size_t remove_own_entries(const std::string& dir, const std::function<bool(const std::string&)>& owned);

}  // namespace gridrun::base
