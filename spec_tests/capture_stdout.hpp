// A spec-test helper: what a kernel prints, read back. Points file descriptor 1 at a temporary
// file until finish(), so that it also catches GPU printf (written to the process's stdout).
#pragma once
#include <unistd.h>

#include <cstdio>
#include <string>

#include <catch2/catch_test_macros.hpp>

namespace ki_test {

/// Redirects fd 1 to a temporary file until finish().
class capture_stdout {
 public:
  capture_stdout() {
    std::fflush(stdout);
    file_ = std::tmpfile();
    REQUIRE(file_ != nullptr);
    saved_ = ::dup(1);
    REQUIRE(saved_ >= 0);
    REQUIRE(::dup2(::fileno(file_), 1) >= 0);
  }
  capture_stdout(const capture_stdout&) = delete;
  capture_stdout& operator=(const capture_stdout&) = delete;
  ~capture_stdout() {
    restore();
    std::fclose(file_);
  }

  std::string finish() {
    restore();
    std::string s;
    std::rewind(file_);
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, file_)) > 0;) s.append(buf, n);
    return s;
  }

 private:
  void restore() {
    if (saved_ >= 0) {
      std::fflush(stdout);
      ::dup2(saved_, 1);
      ::close(saved_);
      saved_ = -1;
    }
  }
  std::FILE* file_ = nullptr;
  int saved_ = -1;
};

}  // namespace ki_test
