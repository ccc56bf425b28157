// paths.h: the user's paths, checked before any work starts. Input files that
// are missing or folders, output folders and files that cannot be written (a
// part that is a regular file, a folder where a file is expected, no write
// permission): each an InputError naming the path, never a
// std::filesystem::filesystem_error or a stream's read error. Folders created
// with the same errors, and stored names (experiments, tables) reduced to file
// names that stay in their folder.
#pragma once

#include <string>

namespace balerbench {

// `path` exists and is not a folder (a regular file, or a pipe such as /dev/stdin). `what` names it
// in the message ("config file"); InputError with `hint` otherwise.
void check_input_file(const std::string& path, const std::string& what, const std::string& hint = "check the path");

// `dir` exists as a writable folder, or can be created: it is not empty, each of its parts that
// exists is a folder, and the deepest one that exists is writable. Creates nothing. InputError
// otherwise, with `hint`.
void check_output_folder(const std::string& dir, const std::string& hint = "choose another output folder");
// `path` can be written as a file: it is not empty, not a folder, not an existing device, pipe or
// socket (an output is written beside it and renamed into place, which would replace such a file:
// /dev/null itself, run as root), and its folder passes check_output_folder. A symbolic link is
// checked as the file it points to.
void check_output_file(const std::string& path, const std::string& hint = "choose another output file");
// Where an output for `path` is written: `path`, or the file a symbolic link at `path` points to
// (followed to its end), so that renaming into place updates the link's file and keeps the link.
// InputError for a loop of links.
std::string output_target(const std::string& path);
// The absolute path of the file `path` names: a link at `path` followed to its end (as output_target,
// also when it dangles), every link and `.` or `..` in the folders above resolved. Two spellings of
// one path give the same result. A loop of links leaves the link itself.
std::string resolved_path(const std::string& path);
// Whether `a` and `b` name one file: the same resolved_path, or (both existing) the same file under
// two names (a hard link).
bool same_file(const std::string& a, const std::string& b);
// InputError when the output `path`, given to `option` ("--html"), names the same file as `input`, one
// of the command's own inputs (`what`: "the experiment file"): an output is never written over what
// the command reads. `hint` says what to do instead (default: give `option` another file).
void check_output_is_not_input(const std::string& path, const std::string& option, const std::string& input,
                               const std::string& what, const std::string& hint = "");
// create_directories(dir); InputError naming the part that is a file, or the system's reason.
void create_output_folder(const std::string& dir, const std::string& hint = "choose another output folder");

// Whether `fd` is a pipe whose reader has closed it (`... | head` once head ended): a write to it fails
// with EPIPE (or raises SIGPIPE). False for anything else, a closed descriptor included.
bool output_reader_gone(int fd);

// `name` as a file name that stays in its folder: [A-Za-z0-9._+-] and well-formed UTF-8 characters
// from U+00A0 up kept ("été"), but not text.h's hidden characters (a bidirectional control such as
// U+202E would reorder the name as a file manager shows it); every other byte '_'; never empty, ".",
// "..", nor starting with '.' (an '_' is put before it).
std::string safe_file_name(const std::string& name);

}  // namespace balerbench
