// ki-check: runs a program that uses the reference backend under N schedule-exploration seeds
// and reports any output that differs from the baseline run (seed 0), with the seed that
// replays it, plus the oracle's launch reports of every run.
//
//   ki-check [--seeds N] [--profile NAME] [--gpu GPU_PROGRAM] [--first] [--json] [--verbose]
//            -- PROGRAM [ARGS...]
//
// Each run gets KI_REFERENCE_SEED=<seed>, KI_REFERENCE_THREADS=1 (deterministic, replayable)
// and KI_REFERENCE_REPORT=<a temporary file> in its environment (and KI_REFERENCE_PROFILE with
// --profile), and KI_RAND_SEED: ki-check's own, else 0, the same in every run, so that random
// kernels (ki::rand) draw the same numbers under every schedule (docs/random.md). Its stdout is compared line by line with the baseline's; a line of the form
// "NAME: v0 v1 v2 ..." is a buffer and is compared element by element. --first stops after the
// first run that differs or has a failed launch (the report then covers the runs made). While
// it runs, and only when stderr is a terminal, one line on stderr shows the seeds done of the
// total, the time elapsed and an estimate of the time left; it is erased before the report, so
// a pipe or a log file sees exactly what it saw without it.
//
// --gpu GPU_PROGRAM: the same program built for the emulated GPU (linked with ki::emulated_cuda
// or ki::emulated_hip; docs/offload.md, "The emulated GPU"), run with the same ARGS under every
// seed too and compared with the same baseline (PROGRAM under seed 0). There every kernel runs
// as a GPU runs it: a KA kernel's group-level code on every thread, its phases as guarded
// statements, @synchronize as __syncthreads; so a KA kernel that is right only because the CPU
// runs each phase as a loop over the group (a missing @synchronize, a synchronize inside items,
// a condition of @synchronize that differs across the group) differs or fails there. Exit status: 0 when every run
// printed the same and no launch failed, 1 when something differs or failed, 2 on bad usage.
#include <poll.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct run_result {
  std::uint64_t seed = 0;
  bool gpu = false;  // GPU_PROGRAM (--gpu), else PROGRAM
  int status = 0;    // exit code, or 128 + signal
  std::vector<std::string> out_lines;
  std::string err;
  std::vector<std::string> reports;  // JSON lines
};

struct element_diff {
  std::size_t index;
  std::string base, value;
};

struct difference {
  std::string what;  // "buffer", "line", "exit"
  std::string buffer;
  std::size_t line = 0, count = 0, total = 0;
  std::vector<element_diff> first;
  std::string base, value;  // line / exit
};

const char* order_of(std::uint64_t seed) { return seed == 0 ? "forward" : seed == 1 ? "reverse" : "random"; }

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream is(s);
  for (std::string l; std::getline(is, l);) v.push_back(l);
  return v;
}

/// The KI_RAND_SEED of every run: ki-check's own, else 0.
std::string rand_seed() {
  const char* e = std::getenv("KI_RAND_SEED");
  return e != nullptr && *e != '\0' ? e : "0";
}

run_result run_once(const std::vector<std::string>& argv, std::uint64_t seed, const std::string& profile,
                    const std::string& report_path) {
  run_result r;
  r.seed = seed;
  std::remove(report_path.c_str());
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) {
    std::perror("ki-check: pipe");
    std::exit(2);
  }
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("ki-check: fork");
    std::exit(2);
  }
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(err_pipe[0]);
    setenv("KI_REFERENCE_SEED", std::to_string(seed).c_str(), 1);
    setenv("KI_REFERENCE_THREADS", "1", 1);
    setenv("KI_RAND_SEED", rand_seed().c_str(), 1);
    setenv("KI_REFERENCE_REPORT", report_path.c_str(), 1);
    if (!profile.empty()) setenv("KI_REFERENCE_PROFILE", profile.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "ki-check: cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  // Both pipes at once (a child filling one while we block on the other would hang).
  std::string out, err;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  for (int open_fds = 2; open_fds > 0;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[65536];
      const ssize_t n = read(fds[k].fd, buf, sizeof buf);
      if (n > 0) (k == 0 ? out : err).append(buf, static_cast<std::size_t>(n));
      else if (n == 0 || errno != EINTR) fds[k].fd = -1, --open_fds;
    }
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.out_lines = lines_of(out);
  r.err = err;
  std::ifstream rf(report_path);
  for (std::string l; std::getline(rf, l);)
    if (!l.empty()) r.reports.push_back(l);
  std::remove(report_path.c_str());
  return r;
}

/// "name: a b c" -> name and tokens (false when the line is not of that form).
bool as_buffer(const std::string& line, std::string& name, std::vector<std::string>& values) {
  const auto colon = line.find(": ");
  if (colon == std::string::npos || colon == 0 || line.find(' ') < colon) return false;
  name = line.substr(0, colon);
  values.clear();
  std::istringstream is(line.substr(colon + 2));
  for (std::string t; is >> t;) values.push_back(t);
  return true;
}

std::vector<difference> compare(const run_result& base, const run_result& r) {
  std::vector<difference> d;
  if (base.status != r.status) {
    difference x;
    x.what = "exit";
    x.base = std::to_string(base.status);
    x.value = std::to_string(r.status);
    d.push_back(x);
  }
  const std::size_t n = std::max(base.out_lines.size(), r.out_lines.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::string a = i < base.out_lines.size() ? base.out_lines[i] : "",
                      b = i < r.out_lines.size() ? r.out_lines[i] : "";
    if (a == b) continue;
    std::string na, nb;
    std::vector<std::string> va, vb;
    difference x;
    x.line = i + 1;
    if (as_buffer(a, na, va) && as_buffer(b, nb, vb) && na == nb) {
      x.what = "buffer";
      x.buffer = na;
      x.total = std::max(va.size(), vb.size());
      for (std::size_t k = 0; k < x.total; ++k) {
        const std::string ea = k < va.size() ? va[k] : "(none)", eb = k < vb.size() ? vb[k] : "(none)";
        if (ea == eb) continue;
        ++x.count;
        if (x.first.size() < 8) x.first.push_back({k, ea, eb});
      }
    } else {
      x.what = "line";
      x.base = a;
      x.value = b;
    }
    d.push_back(x);
  }
  return d;
}

std::string json_string(const std::string& s) {
  std::string r = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') r += '\\', r += c;
    else if (c == '\n') r += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) r += ' ';
    else r += c;
  }
  return r + "\"";
}

/// The "kind" values of a report line, with their severities, for the readable summary.
std::vector<std::string> kinds_in(const std::string& json) {
  std::vector<std::string> k;
  for (auto p = json.find("{\"kind\":\""); p != std::string::npos; p = json.find("{\"kind\":\"", p + 1)) {
    const auto s = p + 9, e = json.find('"', s);
    const auto sv = json.find("\"severity\":\"", e);
    const auto sve = sv == std::string::npos ? sv : json.find('"', sv + 12);
    k.push_back((sv == std::string::npos ? std::string() : json.substr(sv + 12, sve - sv - 12) + " ") +
                json.substr(s, e - s));
  }
  return k;
}

bool has_error(const run_result& r) {
  for (const auto& rep : r.reports)
    if (rep.find("\"severity\":\"error\"") != std::string::npos) return true;
  return false;
}

/// The progress line (stderr is a terminal): rewritten in place after each run.
void show_progress(std::size_t done, std::uint64_t total, double elapsed_s, std::size_t with_findings) {
  const double left = done == 0 ? 0.0 : elapsed_s / static_cast<double>(done) * static_cast<double>(total - done);
  std::fprintf(stderr, "\r\033[Kki-check: %zu/%llu seeds done, %.1f s elapsed, about %.1f s left", done,
               static_cast<unsigned long long>(total), elapsed_s, left);
  if (with_findings > 0) std::fprintf(stderr, ", %zu with findings", with_findings);
  std::fflush(stderr);
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

int usage() {
  std::fprintf(stderr,
               "usage: ki-check [--seeds N] [--profile NAME] [--gpu GPU_PROGRAM] [--first] [--json] [--verbose]\n"
               "                -- PROGRAM [ARGS...]\n"
               "  runs PROGRAM under schedule-exploration seeds 0..N-1 (default 8) of the reference backend\n"
               "  and reports outputs that differ from seed 0, with the seed that replays them;\n"
               "  --gpu also runs GPU_PROGRAM (the same program built for the emulated GPU) with ARGS under\n"
               "  every seed, against the same baseline;\n"
               "  --first stops at the first run that differs or fails\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seeds = 8;
  std::string profile, gpu_program;
  bool json = false, verbose = false, first = false;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--seeds" && i + 1 < argc) {
      char* end = nullptr;
      seeds = std::strtoull(argv[++i], &end, 10);
      if (*end != '\0' || seeds < 2) {
        std::fprintf(stderr, "ki-check: --seeds %s: expected an integer >= 2\n", argv[i]);
        return 2;
      }
    } else if (a == "--profile" && i + 1 < argc) {
      profile = argv[++i];
    } else if (a == "--gpu" && i + 1 < argc) {
      gpu_program = argv[++i];
    } else if (a == "--first") {
      first = true;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--verbose") {
      verbose = true;
    } else if (a.rfind("-", 0) == 0) {
      return usage();
    } else {
      break;
    }
  }
  if (i >= argc) return usage();
  const std::vector<std::string> prog(argv + i, argv + argc);
  std::vector<std::string> gpu_prog;  // GPU_PROGRAM with PROGRAM's arguments
  if (!gpu_program.empty()) {
    gpu_prog = prog;
    gpu_prog.front() = gpu_program;
  }
  const auto program_of = [&](const run_result& r) -> const std::vector<std::string>& {
    return r.gpu ? gpu_prog : prog;
  };
  const char* tmp = std::getenv("TMPDIR");
  const std::string report_path =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/ki-check-" + std::to_string(getpid()) + ".jsonl";

  const bool progress = isatty(2) != 0;
  const auto start = std::chrono::steady_clock::now();
  std::vector<run_result> runs;
  std::vector<std::vector<difference>> diffs;
  std::size_t differing = 0, with_errors = 0, with_findings = 0, gpu_findings = 0;
  bool stopped = false;  // by --first, before the last seed
  const std::uint64_t total = gpu_prog.empty() ? seeds : 2 * seeds;
  for (std::uint64_t k = 0; k < total; ++k) {
    const std::uint64_t s = gpu_prog.empty() ? k : k / 2;
    const bool gpu = !gpu_prog.empty() && k % 2 == 1;
    runs.push_back(run_once(gpu ? gpu_prog : prog, s, profile, report_path));
    runs.back().gpu = gpu;
    diffs.push_back(k == 0 ? std::vector<difference>{} : compare(runs.front(), runs.back()));
    const bool differs = !diffs.back().empty(), failed = has_error(runs.back());
    differing += differs ? 1 : 0;
    with_errors += failed ? 1 : 0;
    with_findings += differs || failed ? 1 : 0;
    gpu_findings += gpu && (differs || failed) ? 1 : 0;
    if (progress)
      show_progress(runs.size(), total, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                    with_findings);
    if (first && (differs || failed)) {
      stopped = k + 1 < total;
      break;
    }
  }
  if (progress) {  // erase the line: the report that follows starts at column 0
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  const bool found = differing > 0 || with_errors > 0;
  const auto ran = static_cast<unsigned long long>(runs.size());

  if (json) {
    std::ostringstream os;
    os << "{\"program\":" << json_string(command_line(prog)) << ",\"gpu_program\":" << json_string(gpu_program)
       << ",\"profile\":" << json_string(profile) << ",\"seeds\":" << seeds << ",\"seeds_run\":" << ran
       << ",\"stopped_by_first\":" << (stopped ? "true" : "false") << ",\"found\":" << (found ? "true" : "false")
       << ",\"runs\":[";
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const auto& r = runs[k];
      os << (k ? "," : "") << "{\"seed\":" << r.seed << ",\"model\":\"" << (r.gpu ? "gpu" : "cpu") << "\",\"order\":\""
         << order_of(r.seed) << "\",\"exit\":" << r.status << ",\"replay\":"
         << json_string("KI_REFERENCE_SEED=" + std::to_string(r.seed) +
                        " KI_REFERENCE_THREADS=1 KI_RAND_SEED=" + rand_seed() + " " + command_line(program_of(r)))
         << ",\"differences\":[";
      for (std::size_t j = 0; j < diffs[k].size(); ++j) {
        const auto& d = diffs[k][j];
        os << (j ? "," : "") << "{\"what\":\"" << d.what << "\",\"line\":" << d.line;
        if (d.what == "buffer") {
          os << ",\"buffer\":" << json_string(d.buffer) << ",\"count\":" << d.count << ",\"elements\":" << d.total
             << ",\"first\":[";
          for (std::size_t e = 0; e < d.first.size(); ++e)
            os << (e ? "," : "") << "{\"index\":" << d.first[e].index
               << ",\"baseline\":" << json_string(d.first[e].base) << ",\"value\":" << json_string(d.first[e].value)
               << "}";
          os << "]";
        } else {
          os << ",\"baseline\":" << json_string(d.base) << ",\"value\":" << json_string(d.value);
        }
        os << "}";
      }
      os << "],\"reports\":[";
      for (std::size_t j = 0; j < r.reports.size(); ++j) os << (j ? "," : "") << r.reports[j];
      os << "]}";
    }
    os << "]}\n";
    std::cout << os.str();
    return found ? 1 : 0;
  }

  std::printf("ki-check: %llu runs of '%s'%s%s%s%s%s (seed 0 = forward order is the baseline; threads = 1)\n", ran,
              command_line(prog).c_str(), gpu_prog.empty() ? "" : " and of its GPU model '", gpu_program.c_str(),
              gpu_prog.empty() ? "" : "'", profile.empty() ? "" : ", profile ", profile.c_str());
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const auto& r = runs[k];
    std::vector<std::string> kinds;
    for (const auto& rep : r.reports)
      for (auto& x : kinds_in(rep)) kinds.push_back(x);
    if (diffs[k].empty() && kinds.empty() && !verbose) continue;
    std::printf("seed %llu (%s order)%s:", static_cast<unsigned long long>(r.seed), order_of(r.seed),
                r.gpu ? ", GPU model" : "");
    if (diffs[k].empty()) std::printf(" same output as seed 0");
    std::printf("\n");
    for (const auto& d : diffs[k]) {
      if (d.what == "exit") {
        std::printf("  exit status %s (seed 0: %s)\n", d.value.c_str(), d.base.c_str());
      } else if (d.what == "buffer") {
        std::printf("  buffer '%s' (output line %zu) differs in %zu of %zu elements; first:", d.buffer.c_str(), d.line,
                    d.count, d.total);
        for (const auto& e : d.first) std::printf(" [%zu] %s -> %s;", e.index, e.base.c_str(), e.value.c_str());
        std::printf("\n");
      } else {
        std::printf("  output line %zu differs:\n    seed 0: %s\n    seed %llu: %s\n", d.line, d.base.c_str(),
                    static_cast<unsigned long long>(r.seed), d.value.c_str());
      }
    }
    if (!kinds.empty()) {
      std::printf("  oracle reports:");
      for (const auto& x : kinds) std::printf(" %s;", x.c_str());
      std::printf("\n");
    }
    if (verbose && !r.err.empty()) std::printf("  stderr:\n%s", r.err.c_str());
    if (!diffs[k].empty() || !kinds.empty())
      std::printf("  replay: KI_REFERENCE_SEED=%llu KI_REFERENCE_THREADS=1 KI_RAND_SEED=%s%s%s %s\n",
                  static_cast<unsigned long long>(r.seed), rand_seed().c_str(),
                  profile.empty() ? "" : " KI_REFERENCE_PROFILE=", profile.c_str(),
                  command_line(program_of(r)).c_str());
  }
  if (differing > 0)
    std::printf(
        "ki-check: FOUND: the output differs from seed 0 in %zu of %llu runs: it depends on the schedule (a race, "
        "an uninitialised read or a sub-group layout assumption)%s\n",
        differing, ran - 1, gpu_findings > 0 ? " or on the execution model (the GPU model's runs)" : "");
  if (with_errors > 0)
    std::printf("ki-check: FOUND: launches failed in %zu runs (see the oracle reports)\n", with_errors);
  if (gpu_findings > 0)
    std::printf("ki-check: FOUND: %zu of %llu runs in the GPU model differ or fail\n", gpu_findings,
                static_cast<unsigned long long>(seeds));
  if (stopped)
    std::printf("ki-check: stopped by --first after seed %llu%s (%llu of %llu runs)\n",
                static_cast<unsigned long long>(runs.back().seed), runs.back().gpu ? " in the GPU model" : "", ran,
                static_cast<unsigned long long>(total));
  if (!found)
    std::printf("ki-check: no difference and no error under %llu seeds%s\n", static_cast<unsigned long long>(seeds),
                gpu_prog.empty() ? "" : ", in both models");
  return found ? 1 : 0;
}
