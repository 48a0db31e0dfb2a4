// SPDX-License-Identifier: MIT
// mc_reference.cpp - seed 000's Monte Carlo pricer as the seed wrote it
// (std::mt19937_64, std::normal_distribution, std::vector and
// std::pmr::vector on a monotonic_buffer_resource over 4096 bytes of stack),
// built with g++ -std=c++17.  It is the reference the C pricer must match to
// the bit.  The two simulate_one_path_* functions are the seed's text; the
// Google Benchmark harness is replaced by a plain main that prints each
// variant's price with %.17g, its wall time and its CPU time.
//
// usage: mc_reference [paths]    (default 1000000)
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory_resource>
#include <random>
#include <vector>

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

double simulate_one_path_arena(std::mt19937_64 &rng, double S0, double r, double sigma, double T,
                               std::size_t N_steps) {
    std::array<std::byte, 4096> scratch;
    std::pmr::monotonic_buffer_resource arena(scratch.data(), scratch.size());
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

static constexpr std::size_t N_STEPS = 252;
static constexpr double S0 = 4.20;
static constexpr double K = 4.30;
static constexpr double R = 0.024;
static constexpr double SIG = 0.18;
static constexpr double T = 0.5;

template <typename Sim> static double price(Sim simulate, std::size_t n_paths) {
    std::mt19937_64 rng(42);
    double sum = 0.0;
    for (std::size_t i = 0; i < n_paths; ++i) {
        double ST = simulate(rng, S0, R, SIG, T, N_STEPS);
        sum += std::max(ST - K, 0.0);
    }
    return std::exp(-R * T) * sum / static_cast<double>(n_paths);
}

int main(int argc, char **argv) {
    std::size_t n_paths = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
    if (n_paths == 0) {
        std::fprintf(stderr, "usage: mc_reference [paths > 0]\n");
        return 2;
    }
    double prices[2];
    const char *names[2] = {"baseline", "arena"};
    for (int v = 0; v < 2; ++v) {
        auto t0 = std::chrono::steady_clock::now();
        std::clock_t c0 = std::clock();
        prices[v] = price(v == 0 ? simulate_one_path_baseline : simulate_one_path_arena, n_paths);
        std::clock_t c1 = std::clock();
        auto t1 = std::chrono::steady_clock::now();
        std::printf("price %s %.17g\n", names[v], prices[v]);
        std::printf("time %s %.6f s cpu %.6f s\n", names[v],
                    std::chrono::duration<double>(t1 - t0).count(),
                    static_cast<double>(c1 - c0) / CLOCKS_PER_SEC);
    }
    if (prices[0] != prices[1]) {
        std::fprintf(stderr, "mc_reference: the variants disagree\n");
        return 1;
    }
    return 0;
}
