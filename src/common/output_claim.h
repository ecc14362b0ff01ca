// The output path of a command that writes a file for a long time (`record`,
// `finish`), claimed for the whole run.
//
// The file is written under a temporary name and renamed into place at the
// end (a reader never sees half a trace under the final name). Checking the
// path only at the start would let a file created there meanwhile -- by the
// user, or by a second `record -o` of the same name -- be replaced without
// --force. So the path is claimed at the start: created empty and
// exclusively (or, with --force, the regular file there is taken), and held
// with an exclusive flock(2) that a second callscope finds. At the end the
// temporary file replaces the path only if the path is still the file
// claimed, unchanged; else it is left alone and the caller says where the
// trace is.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"

namespace callscope {

class OutputClaim {
 public:
  // Claims `path`. Refused: a directory or other non-regular file; a file
  // another callscope is writing (even with `force`); an existing file
  // without `force`, unless `take_empty` and it is empty (the placeholder a
  // killed `record` left). The error says what to do.
  static Result<std::unique_ptr<OutputClaim>> take(const std::string& path, bool force, bool take_empty = false);
  // Releases the path: the empty file made at the start is removed unless the
  // trace was published over it (or someone wrote into it).
  ~OutputClaim();
  OutputClaim(const OutputClaim&) = delete;
  OutputClaim& operator=(const OutputClaim&) = delete;

  const std::string& path() const { return path_; }
  // Renames `tmp` to the path if the path is still the file claimed and
  // unchanged (or gone: then without replacing what may appear). Otherwise
  // `tmp` stays where it is, conflict() is set, and the error says where.
  Status publish(const std::string& tmp);
  bool conflict() const { return conflict_; }
  // release() for a signal handler: only async-signal-safe calls.
  void release_from_signal() const;

 private:
  OutputClaim() = default;
  // The claimed file is still at the path, as it was when claimed.
  bool unchanged() const;
  std::string path_;
  int fd_ = -1;  // holds the flock; -1 for a symlink taken with --force
  bool created_ = false;
  bool published_ = false;
  bool conflict_ = false;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  int64_t size_ = 0;
  int64_t mtime_ns_ = 0;
};

}  // namespace callscope
