// A structural check of a LibTorch archive (a checkpoint's state.pt or rng-*.pt) before LibTorch
// reads it (issue 24).
//
// Why: LibTorch 1.13's reader trusts the lengths inside the file. One flipped byte in a pickle's
// BINUNICODE length made it allocate and zero a 1 GB string before noticing the file ends (1.4 s,
// 6 s under ASan, per damaged file); a memo id read as 4 billion makes it reserve tens of GB.
// And LibTorch's zip reader is built without miniz's CRC checks, so changed bytes in tensor data
// loaded silently as wrong weights, and changed bytes in the TorchScript code it compiles on load
// reached a throw inside a noexcept frame (std::terminate). Those are damaged files, and gridrun
// treats them as such: this walk of the zip directory (every record inside the file, sizes that
// agree, the CRC-32 of every record's bytes) and of every pickle's opcodes (the pickle format,
// protocols 0-5: every length within its record, every memo id within reason, a STOP at the end)
// rejects them before LibTorch allocates anything by them. Cost: one CRC pass over the file. It
// does not interpret the pickle: what passes still goes through LibTorch's own checks, and rank 0's
// trial read in a process of its own (Checkpointer) still bounds what this misses.
#pragma once

#include <cstddef>
#include <string>

namespace gridrun::runner {

// Throws std::runtime_error("<what> at byte N") for a damaged archive; returns for a sound one.
// Reads the zip's end record, central directory and local headers, and every record once (CRC).
void check_torch_archive(const std::string& path);

// The pickle walk alone (exposed for tests): `what` names the record in messages.
void check_pickle(const unsigned char* data, std::size_t size, const std::string& what);

}  // namespace gridrun::runner
