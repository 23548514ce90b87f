// ki-trace: runs a program that uses the reference backend and writes one self-contained HTML
// page (inline SVG) that shows how the oracle ran the chosen work-groups of its launches
// (ki/reference/trace.hpp says what the page shows).
//
//   ki-trace [--group X[,Y[,Z]]]... [--profile NAME] [--seed S] [--launches N] [--no-accesses]
//            [--svg DIR] -o PAGE.html -- PROGRAM [ARGS...]
//
// The program runs with KI_REFERENCE_TRACE=PAGE.html (the reference backend records while the
// program runs and rewrites the page each time a traced group ends, so a program that fails
// later still leaves it), KI_REFERENCE_TRACE_GROUPS (default: group 0,0,0), KI_REFERENCE_THREADS=1
// (groups one after another: a deterministic page) and, when given, KI_REFERENCE_SEED (the
// schedule: 0 forward, 1 reverse, others random) and KI_REFERENCE_PROFILE. --svg DIR also
// writes each traced group as a standalone SVG in DIR, named after its kernel
// (KI_REFERENCE_TRACE_SVG_DIR; ki/reference/trace.hpp: trace_options::svg_dir). The program's own
// output passes through. Exit status: 0 when the page was written (whatever the program's
// status, which is printed), 1 when the program made no launch on the reference backend or the
// page is missing, 2 on bad usage.
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

int usage(const std::string& why) {
  std::cerr << "ki-trace: " << why << "\n"
            << "usage: ki-trace [--group X[,Y[,Z]]]... [--profile NAME] [--seed S] [--launches N] [--no-accesses]\n"
            << "                [--svg DIR] -o PAGE.html -- PROGRAM [ARGS...]\n";
  return 2;
}

bool is_number_list(const std::string& s, int max_parts) {
  int parts = 0;
  std::stringstream ss(s);
  std::string p;
  while (std::getline(ss, p, ',')) {
    if (p.empty() || p.find_first_not_of("0123456789") != std::string::npos) return false;
    ++parts;
  }
  return parts >= 1 && parts <= max_parts && s.back() != ',';
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> groups;
  std::string profile, seed, launches, out, svg_dir;
  bool accesses = true;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* what) -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(std::string(what) + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--") {
        ++i;
        break;
      } else if (a == "--group") {
        const std::string g = value("--group");
        if (!is_number_list(g, 3)) return usage("--group '" + g + "': expected X[,Y[,Z]] (numbers >= 0)");
        groups.push_back(g);
      } else if (a == "--profile") {
        profile = value("--profile");
      } else if (a == "--seed") {
        seed = value("--seed");
        if (!is_number_list(seed, 1)) return usage("--seed '" + seed + "': expected a number >= 0");
      } else if (a == "--launches") {
        launches = value("--launches");
        if (!is_number_list(launches, 1) || launches == "0")
          return usage("--launches '" + launches + "': expected a number >= 1");
      } else if (a == "--svg") {
        svg_dir = value("--svg");
      } else if (a == "--no-accesses") {
        accesses = false;
      } else if (a == "-o") {
        out = value("-o");
      } else if (a == "-h" || a == "--help") {
        usage("help");
        return 0;
      } else {
        return usage("unknown option '" + a + "'");
      }
    } catch (const std::invalid_argument& e) {
      return usage(e.what());
    }
  }
  if (out.empty()) return usage("no output page (-o PAGE.html)");
  if (i >= argc) return usage("no program to run (after --)");

  std::remove(out.c_str());
  std::string title = "ki-trace:";
  for (int k = i; k < argc; ++k) title += std::string(" ") + argv[k];

  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("ki-trace: fork");
    return 1;
  }
  if (pid == 0) {
    setenv("KI_REFERENCE_TRACE", out.c_str(), 1);
    setenv("KI_REFERENCE_TRACE_TITLE", title.c_str(), 1);
    setenv("KI_REFERENCE_THREADS", "1", 1);
    if (!groups.empty()) {
      std::string g;
      for (const auto& x : groups) g += (g.empty() ? "" : ";") + x;
      setenv("KI_REFERENCE_TRACE_GROUPS", g.c_str(), 1);
    }
    if (!launches.empty()) setenv("KI_REFERENCE_TRACE_LAUNCHES", launches.c_str(), 1);
    if (!accesses) setenv("KI_REFERENCE_TRACE_ACCESSES", "0", 1);
    if (!svg_dir.empty()) setenv("KI_REFERENCE_TRACE_SVG_DIR", svg_dir.c_str(), 1);
    if (!seed.empty()) setenv("KI_REFERENCE_SEED", seed.c_str(), 1);
    if (!profile.empty()) setenv("KI_REFERENCE_PROFILE", profile.c_str(), 1);
    execvp(argv[i], argv + i);
    std::perror(("ki-trace: " + std::string(argv[i])).c_str());
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {
  }
  const int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  std::ifstream page(out);
  std::string first, second;
  std::getline(page, first);
  std::getline(page, second);
  if (!page) {
    std::cerr << "ki-trace: no page: the program (exit status " << status
              << ") made no launch on the reference backend\n";
    return 1;
  }
  // (the page's second line: <!-- ki-trace launches=N groups=M -->)
  std::string counts = second.size() > 9 ? second.substr(5, second.size() - 9) : second;
  std::cerr << "ki-trace: wrote " << out << " (" << counts.substr(counts.find(' ') + 1)
            << "; the program's exit status " << status << ")\n";
  return 0;
}
