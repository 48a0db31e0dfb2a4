// SPDX-License-Identifier: MIT
// pricer_pmr.cpp - seed 000's Monte Carlo pricer in C++ with its std::pmr
// resources replaced by alloy's through <alloy/pmr.hpp>, beside the standard
// library's own resources.
//
// The kernel is the seed's C++ (std::mt19937_64 seeded with 42, a fresh
// std::normal_distribution per path, std::exp and std::sqrt, 252 GBM steps),
// as in mc_reference.cpp; only the memory resource under each path's
// std::pmr::vector<double> changes:
//
//   baseline       std::vector<double>(252): operator new per path (the seed's)
//   arena          alloy::pmr::arena_resource over 4096 B of stack, per path
//   std-arena      std::pmr::monotonic_buffer_resource, the same (the seed's)
//   pool           alloy::pmr::pool_resource, made once per pricing
//   std-pool       std::pmr::unsynchronized_pool_resource, the same
//   sync-pool      alloy::pmr::synchronized_pool_resource, the same
//   std-sync-pool  std::pmr::synchronized_pool_resource, the same
//
// Every variant must print the same %.17g price, which is also the C
// pricer's and mc_reference's; the program exits 1 if any two differ in any
// bit.  --selftest-mismatch seeds the pool variant with 43 to show that this
// check fires.
//
// Timing: --runs R runs R rounds; each round runs every selected variant
// once, in order on odd rounds and in reverse order on even ones (A B C,
// C B A, ...), so drift of a busy machine falls on both sides.  Each run
// line gives the wall time and the thread's CPU time.  The summary gives
// each variant's medians, and for each alloy variant and its standard
// counterpart the paired statistic: the median over rounds of
// time(alloy) / time(std) within the same round (below 1: alloy faster).
//
// usage: pricer_pmr [--paths N] [--runs R] [--variant all|NAME[,NAME...]]
//                   [--selftest-mismatch]
#include <alloy/pmr.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory_resource>
#include <random>
#include <string>
#include <vector>

namespace {

// ---- the seed's code -------------------------------------------------------

double simulate_one_path_baseline(std::mt19937_64 &rng, double S0, double r, double sigma, double T,
                                  std::size_t N_steps) {
    std::vector<double> path(N_steps); // heap allocation here
    double dt = T / static_cast<double>(N_steps);
    double S = S0;
    std::normal_distribution<double> norm(0.0, 1.0);
    for (std::size_t k = 0; k < N_steps; ++k) {
        double z = norm(rng);
        S *= std::exp((r - 0.5 * sigma * sigma) * dt + sigma * std::sqrt(dt) * z);
        path[k] = S;
    }
    return path.back();
}

// The seed's simulate_one_path_arena, word for word, with the type of its
// arena a parameter: std::pmr::monotonic_buffer_resource (the seed's) or
// alloy::pmr::arena_resource.
template <class Arena>
double simulate_one_path_arena(std::mt19937_64 &rng, double S0, double r, double sigma, double T,
                               std::size_t N_steps) {
    std::array<std::byte, 4096> scratch;
    Arena arena(scratch.data(), scratch.size());
    std::pmr::vector<double> path(N_steps, &arena);

    double dt = T / static_cast<double>(N_steps);
    double S = S0;
    std::normal_distribution<double> norm(0.0, 1.0);
    for (std::size_t k = 0; k < N_steps; ++k) {
        double z = norm(rng);
        S *= std::exp((r - 0.5 * sigma * sigma) * dt + sigma * std::sqrt(dt) * z);
        path[k] = S;
    }
    return path.back();
}

// The same body on a resource that outlives the path (a pool).
double simulate_one_path_on(std::pmr::memory_resource *res, std::mt19937_64 &rng, double S0,
                            double r, double sigma, double T, std::size_t N_steps) {
    std::pmr::vector<double> path(N_steps, res);

    double dt = T / static_cast<double>(N_steps);
    double S = S0;
    std::normal_distribution<double> norm(0.0, 1.0);
    for (std::size_t k = 0; k < N_steps; ++k) {
        double z = norm(rng);
        S *= std::exp((r - 0.5 * sigma * sigma) * dt + sigma * std::sqrt(dt) * z);
        path[k] = S;
    }
    return path.back();
}

constexpr std::size_t N_STEPS = 252;
constexpr double S0 = 4.20;
constexpr double K = 4.30;
constexpr double R = 0.024;
constexpr double SIG = 0.18;
constexpr double T = 0.5;

template <typename Sim> double price(Sim simulate, std::size_t n_paths, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    double sum = 0.0;
    for (std::size_t i = 0; i < n_paths; ++i) {
        double ST = simulate(rng, S0, R, SIG, T, N_STEPS);
        sum += std::max(ST - K, 0.0);
    }
    return std::exp(-R * T) * sum / static_cast<double>(n_paths);
}

// ---- the variants ------------------------------------------------------------

template <class Pool> double price_on_pool(std::size_t n_paths, std::uint64_t seed) {
    Pool pool;
    return price(
        [&pool](std::mt19937_64 &rng, double s0, double r, double sigma, double t, std::size_t n) {
            return simulate_one_path_on(&pool, rng, s0, r, sigma, t, n);
        },
        n_paths, seed);
}

struct variant {
    const char *name;
    double (*run)(std::size_t n_paths, std::uint64_t seed);
    const char *counterpart; // the standard resource it replaces, or nullptr
};

const variant variants[] = {
    {"baseline",
     [](std::size_t n, std::uint64_t s) { return price(simulate_one_path_baseline, n, s); },
     nullptr},
    {"arena",
     [](std::size_t n, std::uint64_t s) {
         return price(simulate_one_path_arena<alloy::pmr::arena_resource>, n, s);
     },
     "std-arena"},
    {"std-arena",
     [](std::size_t n, std::uint64_t s) {
         return price(simulate_one_path_arena<std::pmr::monotonic_buffer_resource>, n, s);
     },
     nullptr},
    {"pool", price_on_pool<alloy::pmr::pool_resource>, "std-pool"},
    {"std-pool", price_on_pool<std::pmr::unsynchronized_pool_resource>, nullptr},
    {"sync-pool", price_on_pool<alloy::pmr::synchronized_pool_resource>, "std-sync-pool"},
    {"std-sync-pool", price_on_pool<std::pmr::synchronized_pool_resource>, nullptr},
};
constexpr int N_VARIANTS = sizeof variants / sizeof variants[0];
constexpr int MAX_RUNS = 99;

double seconds(clockid_t clock) {
    timespec ts;
    clock_gettime(clock, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double median(std::vector<double> xs) {
    std::sort(xs.begin(), xs.end());
    std::size_t n = xs.size();
    return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

[[noreturn]] void usage() {
    std::fprintf(stderr, "usage: pricer_pmr [--paths N] [--runs R] [--variant all|NAME[,NAME...]]"
                         " [--selftest-mismatch]\nvariants:");
    for (const variant &v : variants)
        std::fprintf(stderr, " %s", v.name);
    std::fprintf(stderr, "\n");
    std::exit(2);
}

int find_variant(const std::string &name) {
    for (int v = 0; v < N_VARIANTS; v++)
        if (name == variants[v].name)
            return v;
    return -1;
}

} // namespace

int main(int argc, char **argv) {
    std::size_t n_paths = 1000000;
    int runs = 1;
    bool mismatch = false;
    bool selected[N_VARIANTS];
    std::fill(selected, selected + N_VARIANTS, true);
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--paths") == 0 && i + 1 < argc) {
            n_paths = std::strtoull(argv[++i], nullptr, 10);
        } else if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = std::atoi(argv[++i]);
        } else if (std::strcmp(argv[i], "--variant") == 0 && i + 1 < argc) {
            std::string list = argv[++i];
            if (list != "all") {
                std::fill(selected, selected + N_VARIANTS, false);
                std::size_t at = 0;
                while (at <= list.size()) {
                    std::size_t comma = list.find(',', at);
                    if (comma == std::string::npos)
                        comma = list.size();
                    int v = find_variant(list.substr(at, comma - at));
                    if (v < 0)
                        usage();
                    selected[v] = true;
                    at = comma + 1;
                }
            }
        } else if (std::strcmp(argv[i], "--selftest-mismatch") == 0) {
            mismatch = true;
        } else {
            usage();
        }
    }
    if (n_paths == 0 || runs < 1 || runs > MAX_RUNS)
        usage();

    std::vector<int> order;
    for (int v = 0; v < N_VARIANTS; v++)
        if (selected[v])
            order.push_back(v);
    double prices[N_VARIANTS];
    std::vector<double> wall[N_VARIANTS], cpu[N_VARIANTS];
    for (int run = 0; run < runs; run++) {
        for (std::size_t j = 0; j < order.size(); j++) {
            int v = order[run % 2 == 0 ? j : order.size() - 1 - j];
            std::uint64_t seed = (mismatch && std::strcmp(variants[v].name, "pool") == 0) ? 43 : 42;
            double t0 = seconds(CLOCK_MONOTONIC), c0 = seconds(CLOCK_THREAD_CPUTIME_ID);
            double p = variants[v].run(n_paths, seed);
            double c = seconds(CLOCK_THREAD_CPUTIME_ID) - c0, t = seconds(CLOCK_MONOTONIC) - t0;
            std::printf("run %d %-13s price %.17g time %.6f s cpu %.6f s\n", run + 1,
                        variants[v].name, p, t, c);
            if (!wall[v].empty() && std::memcmp(&p, &prices[v], sizeof p) != 0) {
                std::fprintf(stderr, "pricer_pmr: %s is not deterministic\n", variants[v].name);
                return 1;
            }
            prices[v] = p;
            wall[v].push_back(t);
            cpu[v].push_back(c);
        }
    }

    bool agree = true;
    for (int v : order) {
        std::printf("%-13s price %.17g median %.4f s cpu %.4f s (wall min %.4f, max %.4f; %d runs, "
                    "%zu paths)\n",
                    variants[v].name, prices[v], median(wall[v]), median(cpu[v]),
                    *std::min_element(wall[v].begin(), wall[v].end()),
                    *std::max_element(wall[v].begin(), wall[v].end()), runs, n_paths);
        if (std::memcmp(&prices[v], &prices[order[0]], sizeof prices[v]) != 0)
            agree = false;
    }
    // Paired ratios alloy / std, and baseline / arena as pricer prints it.
    auto paired = [&](int a, int b, const char *what) {
        for (int clock = 0; clock < 2; clock++) {
            const std::vector<double> *xs = clock == 0 ? wall : cpu;
            std::vector<double> ratios;
            for (int i = 0; i < runs; i++)
                ratios.push_back(xs[a][static_cast<std::size_t>(i)] /
                                 xs[b][static_cast<std::size_t>(i)]);
            std::printf("%s %s / %s, %s: median of per-round ratios %.4f (min %.4f, max %.4f)\n",
                        what, variants[a].name, variants[b].name, clock == 0 ? "wall" : "cpu",
                        median(ratios), *std::min_element(ratios.begin(), ratios.end()),
                        *std::max_element(ratios.begin(), ratios.end()));
        }
    };
    for (int v : order) {
        int s = variants[v].counterpart != nullptr ? find_variant(variants[v].counterpart) : -1;
        if (s >= 0 && selected[s])
            paired(v, s, "time");
    }
    int base = find_variant("baseline"), arena = find_variant("arena");
    if (selected[base] && selected[arena])
        paired(base, arena, "speedup");

    if (!agree) {
        std::fprintf(stderr, "pricer_pmr: FAIL: the variants' prices are not bit-identical\n");
        return 1;
    }
    std::printf("prices bit-identical across variants: yes\n");
    return 0;
}
