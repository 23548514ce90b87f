// Past one machine: a 1-D heat stencil split over MPI ranks, each rank driving its own ki device,
// with a halo exchange every step; checked against a single-process run of the same stencil.
//
//   mpirun -np 4 ki_example_mpi_halo [--backend reference|simd_cpu] [--cells N] [--steps T]
//                                    [--no-overlap] [--break-exchange]
//
// The kernels are ordinary ki kernels; MPI moves the data between ranks, ki moves it between a
// rank's host memory and its device (host staging, see docs/scaling.md):
//   - rank r owns cells [r N / P, (r + 1) N / P) of the N, stored at 1..n of a device array of
//     n + 2 with one halo cell at each end (0 and n + 1); outside the domain the value is 0;
//   - each step, the two edge cells (1 and n) are computed first and packed into a 2-element
//     device array, copied to the host, exchanged with the neighbours by MPI_Sendrecv, copied
//     back and unpacked into the halo cells of the new array;
//   - meanwhile a second host thread computes the interior cells 2..n-1 on its own queue (each
//     host thread has its own queue per device), ordered with the main thread's work by events:
//     the interior of step t waits for all of the main thread's step t-1 (its edges read cells
//     the interior now overwrites), and step t+1's edges wait for the interior of step t (they
//     read its cells 2 and n-1 and overwrite cells 1 and n it read). --no-overlap runs
//     everything on the main thread, one after the other. Under the reference backend's delayed
//     queues (KI_REFERENCE_QUEUE=delayed) a missing wait_event is a mismatch every time.
// Rank r uses device (its rank on the node) mod ndevices: one rank per GPU on a node of GPUs.
// Rank 0 gathers the result and compares it with the same stencil run on the whole domain on its
// own device (itself checked against a host loop); every rank exits 1 on a mismatch.
// --break-exchange skips MPI_Sendrecv (every halo then reads 0 after the first step): the check must fail.
#include <mpi.h>

#include <algorithm>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <ki/ki.hpp>
#if KI_EXAMPLE_CUDA
#include <ki/cuda.hpp>
#else
#include <ki/reference.hpp>
#if KI_EXAMPLE_HAS_SIMD_CPU
#include <ki/simd_cpu.hpp>
#endif
#endif

using i64 = std::int64_t;

/// The stencil: out[i] = (in[i-1] + 2 in[i] + in[i+1]) / 4 (integers: exact on every backend).
KI_DEVICE inline i64 heat(ki::span<const i64> in, i64 i) { return (in[i - 1] + 2 * in[i] + in[i + 1]) / 4; }

/// Cells first .. first + count - 1 of out.
struct heat_cells {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<const i64> in, i64 first, i64 count) const {
    const i64 g = ki::get_global_id().x;
    if (g < count) out[first + g] = heat(in, first + g);
  }
};

/// The two edge cells 1 and n of out, also packed into send[0] and send[1] (two work-items).
struct edges_and_pack {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<i64> send, ki::span<const i64> in, i64 n) const {
    const i64 g = ki::get_global_id().x;
    if (g > 1) return;
    const i64 i = g == 0 ? 1 : n;
    out[i] = send[g] = heat(in, i);
  }
};

/// The halo cells 0 and n + 1 of out from recv[0] (the left neighbour's) and recv[1].
struct unpack_halos {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<const i64> recv, i64 n) const {
    const i64 g = ki::get_global_id().x;
    if (g <= 1) out[g == 0 ? 0 : n + 1] = recv[g];
  }
};

struct options {
  std::string backend = "reference";
  i64 cells = 3001, steps = 40;
  bool overlap = true, break_exchange = false;
};

i64 initial(i64 global, i64 cells) {  // a few spikes and a ramp; 0 outside the domain
  if (global < 0 || global >= cells) return 0;
  return (global % 97 == 0 ? 1'000'000 : 0) + global * 3 % 1000;
}

template <ki::backend B>
void launch_cells(const B& b, ki::array<i64, B>& out, const ki::array<i64, B>& in, i64 first, i64 count) {
  if (count > 0) ki::launch(b, {.ndrange = count, .workgroupsize = 64}, heat_cells{}, out, in, first, count);
}

/// The whole domain on one device: the single-process run the distributed one must equal.
template <ki::backend B>
std::vector<i64> single_process(const B& b, const options& o) {
  std::vector<i64> h(static_cast<std::size_t>(o.cells + 2));
  for (i64 j = 0; j < o.cells + 2; ++j) h[static_cast<std::size_t>(j)] = initial(j - 1, o.cells);
  auto x = ki::to_device(b, h), y = ki::to_device(b, h);  // halos 0 and N + 1 stay 0
  for (i64 t = 0; t < o.steps; ++t) {
    launch_cells(b, y, std::as_const(x), 1, o.cells);
    std::swap(x, y);
  }
  auto r = ki::to_host(b, x);
  // The host loop the device run is checked against (independent of ki).
  for (i64 t = 0; t < o.steps; ++t) {
    std::vector<i64> next(h.size(), 0);
    for (i64 i = 1; i <= o.cells; ++i) {
      const auto k = static_cast<std::size_t>(i);
      next[k] = (h[k - 1] + 2 * h[k] + h[k + 1]) / 4;
    }
    h.swap(next);
  }
  if (r != h) throw std::runtime_error("the single-process run differs from the host loop");
  return {r.begin() + 1, r.end() - 1};
}

template <ki::backend B>
bool run(const B& b, const char* backend_name, const options& o) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  // One rank per device: the rank's index among the ranks of its node picks the device.
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int local_rank = 0;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  const auto device = static_cast<int>(local_rank % ki::ndevices(b));
  ki::set_device(b, device);

  const i64 first = o.cells * rank / ranks, n = o.cells * (rank + 1) / ranks - first;
  if (n < 2)
    throw std::invalid_argument("--cells " + std::to_string(o.cells) + ": rank " + std::to_string(rank) +
                                " would own " + std::to_string(n) + " cells (at least 2 per rank)");
  {  // rank 0 prints where every rank runs, in rank order
    const i64 mine[3] = {device, static_cast<i64>(ki::ndevices(b)), first};
    std::vector<i64> where(rank == 0 ? static_cast<std::size_t>(3 * ranks) : 0);
    MPI_Gather(mine, 3, MPI_INT64_T, where.data(), 3, MPI_INT64_T, 0, MPI_COMM_WORLD);
    for (int r = 0; r < (rank == 0 ? ranks : 0); ++r) {
      const i64* w = &where[static_cast<std::size_t>(3 * r)];
      std::printf("rank %d of %d: %s device %lld of %lld, cells [%lld, %lld)\n", r, ranks, backend_name,
                  static_cast<long long>(w[0]), static_cast<long long>(w[1]), static_cast<long long>(w[2]),
                  static_cast<long long>(o.cells * (r + 1) / ranks));
    }
  }
  const int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank + 1 < ranks ? rank + 1 : MPI_PROC_NULL;

  std::vector<i64> h(static_cast<std::size_t>(n + 2));
  for (i64 j = 0; j < n + 2; ++j) h[static_cast<std::size_t>(j)] = initial(first + j - 1, o.cells);
  ki::array<i64, B> cur = ki::to_device(b, h), next = ki::to_device(b, h);
  auto send = ki::allocate<i64>(b, 2), recv = ki::allocate<i64>(b, 2);
  std::vector<i64> host_send(2), host_recv(2, 0);  // from MPI_PROC_NULL nothing arrives: stays 0
  // The arrays of step t: t even reads cur and writes next, t odd the other way round.
  auto in_of = [&](i64 t) -> const ki::array<i64, B>& { return t % 2 == 0 ? cur : next; };
  auto out_of = [&](i64 t) -> ki::array<i64, B>& { return t % 2 == 0 ? next : cur; };

  // The interior thread and the main thread meet twice per step (std::barrier: what one wrote
  // before arriving, the other reads after): after the main thread recorded `halos_ready`, and
  // after the interior thread recorded `interior_done`.
  std::optional<ki::event<B>> halos_ready, interior_done;
  std::barrier meet(2);
  // After an error the interior thread still meets the main thread at every step (without
  // work), so that neither waits forever; the main thread rethrows the error after the loop.
  std::exception_ptr interior_error;
  std::thread interior;
  if (o.overlap)
    interior = std::thread([&] {
      auto guarded = [&](auto&& f) {
        if (interior_error) return;
        try {
          f();
        } catch (...) {
          interior_error = std::current_exception();
        }
      };
      guarded([&] { ki::set_device(b, device); });  // the active device is per host thread
      for (i64 t = 0; t < o.steps; ++t) {
        meet.arrive_and_wait();
        guarded([&] {
          ki::wait_event(b, *halos_ready);  // after the main thread's step t-1
          launch_cells(b, out_of(t), in_of(t), 2, n - 2);
          interior_done = ki::record_event(b);
        });
        meet.arrive_and_wait();
      }
      guarded([&] { ki::synchronize(b); });  // a failed interior launch is reported here
    });

  try {
    for (i64 t = 0; t < o.steps; ++t) {
      if (o.overlap) {
        halos_ready = ki::record_event(b);  // step t-1's edges and unpack (all queued before)
        meet.arrive_and_wait();             // the interior of step t starts on the other queue
      }
      ki::launch(b, {.ndrange = 2}, edges_and_pack{}, out_of(t), send, in_of(t), n);
      ki::copyto(b, host_send, send);
      ki::synchronize(b);  // the edges are on the host; the interior may still be running
      if (!o.break_exchange) {
        // Left edge to the left neighbour, whose right edge arrives in recv[0]; then the mirror.
        MPI_Sendrecv(&host_send[0], 1, MPI_INT64_T, left, 0, &host_recv[1], 1, MPI_INT64_T, right, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Sendrecv(&host_send[1], 1, MPI_INT64_T, right, 1, &host_recv[0], 1, MPI_INT64_T, left, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
      }
      ki::copyto(b, recv, host_recv);  // read when copyto returns: host_recv may change next step
      ki::launch(b, {.ndrange = 2}, unpack_halos{}, out_of(t), std::as_const(recv), n);
      if (o.overlap) {
        meet.arrive_and_wait();  // interior_done of step t is recorded (unless the thread failed)
        if (interior_done) ki::wait_event(b, *interior_done);  // step t+1's edges read cells 2 and n-1
      } else {
        launch_cells(b, out_of(t), in_of(t), 2, n - 2);
      }
    }
  } catch (const std::exception& e) {  // the interior thread waits at `meet`: end every rank
    std::printf("rank %d: error: %s\n", rank, e.what());
    std::fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (interior.joinable()) interior.join();
  if (interior_error) std::rethrow_exception(interior_error);
  const auto mine = ki::to_host(b, in_of(o.steps));

  // Rank 0 gathers the owned cells of every rank and compares them with the single-process run.
  std::vector<int> counts(static_cast<std::size_t>(ranks)), displs(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    displs[static_cast<std::size_t>(r)] = static_cast<int>(o.cells * r / ranks);
    counts[static_cast<std::size_t>(r)] =
        static_cast<int>(o.cells * (r + 1) / ranks) - displs[static_cast<std::size_t>(r)];
  }
  std::vector<i64> all(rank == 0 ? static_cast<std::size_t>(o.cells) : 0);
  MPI_Gatherv(mine.data() + 1, static_cast<int>(n), MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T,
              0, MPI_COMM_WORLD);
  int ok = 1;
  if (rank == 0) {
    const auto expect = single_process(b, o);
    i64 bad = 0, first_bad = -1, sum = 0;
    for (i64 i = 0; i < o.cells; ++i) {
      sum += all[static_cast<std::size_t>(i)];
      if (all[static_cast<std::size_t>(i)] != expect[static_cast<std::size_t>(i)] && bad++ == 0) first_bad = i;
    }
    ok = bad == 0;
    if (ok)
      std::printf("mpi_halo: %lld cells, %lld steps on %d ranks (%s) = the single-process run, sum %lld -> OK\n",
                  static_cast<long long>(o.cells), static_cast<long long>(o.steps), ranks,
                  o.overlap ? "interior overlapped with the exchange" : "no overlap", static_cast<long long>(sum));
    else
      std::printf("mpi_halo: MISMATCH in %lld of %lld cells; first: cell %lld = %lld, single-process run %lld\n",
                  static_cast<long long>(bad), static_cast<long long>(o.cells), static_cast<long long>(first_bad),
                  static_cast<long long>(all[static_cast<std::size_t>(first_bad)]),
                  static_cast<long long>(expect[static_cast<std::size_t>(first_bad)]));
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok != 0;
}

options parse(int argc, char** argv) {
  options o;
  auto number = [&](int& i) {
    if (i + 1 >= argc) throw std::invalid_argument(std::string(argv[i]) + ": a number must follow");
    char* end = nullptr;
    const long long v = std::strtoll(argv[++i], &end, 10);
    if (*end != '\0' || v < 1)
      throw std::invalid_argument(std::string(argv[i - 1]) + " " + argv[i] + ": expected an integer >= 1");
    return static_cast<i64>(v);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--backend" && i + 1 < argc) o.backend = argv[++i];
    else if (a == "--cells") o.cells = number(i);
    else if (a == "--steps") o.steps = number(i);
    else if (a == "--no-overlap") o.overlap = false;
    else if (a == "--break-exchange") o.break_exchange = true;
    else throw std::invalid_argument("unknown argument '" + a + "'");
  }
  return o;
}

int main(int argc, char** argv) {
  int provided = 0;
  // Only the main thread calls MPI; the interior thread calls ki only.
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 0;
  try {
    auto o = parse(argc, argv);
    if (provided < MPI_THREAD_FUNNELED) o.overlap = false;
#if KI_EXAMPLE_CUDA
    std::string why;
    if (!ki::cuda::available(&why)) {
      if (rank == 0) std::printf("skipped: no CUDA device (%s)\n", why.c_str());
      MPI_Finalize();
      return 77;
    }
    status = run(ki::cuda::backend{}, "cuda", o) ? 0 : 1;
#else
    if (o.backend == "reference") status = run(ki::reference::backend{}, "reference", o) ? 0 : 1;
#if KI_EXAMPLE_HAS_SIMD_CPU
    else if (o.backend == "simd_cpu") status = run(ki::simd_cpu::backend{}, "simd_cpu", o) ? 0 : 1;
#endif
    else throw std::invalid_argument("--backend " + o.backend + ": not in this build (reference, simd_cpu if built)");
#endif
  } catch (const std::exception& e) {
    std::printf("rank %d: error: %s\n", rank, e.what());
    std::fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
