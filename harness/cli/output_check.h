// output_check.h: write errors are failures. A file-size limit becomes a write
// error (EFBIG) that is reported, not a silent kill by SIGXFSZ; what a command
// wrote to stdout is checked when it ends (flush and close), and large output
// as it is written, so `report > /dev/full` exits 4 with a message.
#pragma once

#include <string>

namespace balerbench::cli {

// Ignores SIGXFSZ, remembering the disposition balerbench was started with (main, once).
void ignore_file_size_signal();
// SIGXFSZ as balerbench found it, for a command it runs (measure's child, between fork and exec;
// async-signal-safe).
void restore_file_size_signal();

// Writes `text` to stdout and flushes it; WriteError when either fails.
void write_stdout(const std::string& text);
// Flushes std::cout and stdout and closes stdout; WriteError when that, or an earlier write to
// stdout, failed. Called once, when the command has returned.
void close_stdout();

// An output file (`option`'s) that would replace an SQLite database, a results database most likely
// (its first bytes say so, whatever its name), or the -wal, -shm or -journal file of one beside it
// (whose trials not yet checkpointed would be lost): InputError, before any work. `--db` is not an
// output of this kind; every other file a command writes is.
void check_not_over_a_database(const std::string& path, const std::string& option);

}  // namespace balerbench::cli
