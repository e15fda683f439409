#pragma once
// The checks every writer makes before it starts work: an output path names a
// regular file or nothing yet, never a directory, device, FIFO or socket (an
// atomic write ends in rename(), which would replace such a thing with a file).
// An existing file must be writable: one made read-only is kept (the replacement
// takes the old file's permissions). A symlink is followed: the write goes to its
// target, which must pass the same checks, and the link stays a link. The folder
// must exist (a mistyped path never grows a tree of folders) and accept a new file
// (tried by creating and removing one).
#include <string>
#include <vector>

namespace translution {

// Returns the path to write (the symlink's target, when `path` is a link), or throws
// translution::Error with one line naming the path and what is wrong.
std::string checked_output_path(const std::string& path);

// Throws translution::Error where `output` names the same file as `input` (by inode: a link or
// another spelling counts): a command that reads one file and writes another would replace
// what it read with a conversion of it.
void refuse_input_as_output(const std::string& input, const std::string& output);
// The same for every input against every output of a command.
void refuse_inputs_as_outputs(const std::vector<std::string>& inputs,
                              const std::vector<std::string>& outputs);

}  // namespace translution
