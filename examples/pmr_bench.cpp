// SPDX-License-Identifier: MIT
// pmr_bench.cpp - a container-heavy std::pmr workload on alloy's resources
// (<alloy/pmr.hpp>) and on the standard library's, interleaved and paired.
//
// One request tokenizes a text and counts its words, all in containers on
// one memory resource:
//
//   std::pmr::vector<std::pmr::string> tokens(r);     // 4096 tokens, 4-48 chars
//   for (w : text) tokens.emplace_back(w);            //   (about 1 in 4 fits the
//                                                     //   small-string buffer)
//   std::pmr::unordered_map<std::pmr::string, int> counts(r);
//   for (t : tokens) ++counts[t];                     // 512 distinct words
//
// and returns a checksum, which every variant must agree on.  Variants:
//
//   new-delete     std::pmr::new_delete_resource() (operator new per block)
//   arena          alloy::pmr::arena_resource over a 64 KiB stack buffer, made
//                  and destroyed per request (upstream: new_delete)
//   std-arena      std::pmr::monotonic_buffer_resource, the same
//   arena-reset    one alloy::pmr::arena_resource over the same buffer for the
//                  whole run, reset() after each request: it keeps its chunks,
//                  which std's release() cannot
//   pool           alloy::pmr::pool_resource for the whole run
//   std-pool       std::pmr::unsynchronized_pool_resource, the same
//   sync-pool      alloy::pmr::synchronized_pool_resource, the same
//   std-sync-pool  std::pmr::synchronized_pool_resource, the same
//
// Method: --rounds R rounds; each round runs every variant once for
// --requests N requests, in order on odd rounds and reversed on even ones.
// A variant's time is the thread's CPU time per request (time descheduled
// on a busy machine does not count).  The summary gives each variant's
// median over rounds with min and max, and for each alloy variant and its
// standard counterpart the median over rounds of the paired ratio
// time(alloy) / time(std) within a round (below 1: alloy faster).
//
// --variant runs only the variants named (for instruction counts, say).
//
// usage: pmr_bench [--requests N] [--rounds R] [--variant NAME[,NAME...]] [--csv]
#include <alloy/pmr.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory_resource>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr std::size_t N_TOKENS = 4096;
constexpr std::size_t N_WORDS = 512;
constexpr std::size_t ARENA_BUFFER = 64 << 10;

std::vector<std::string> make_text() {
    std::mt19937 g(7);
    std::vector<std::string> vocab;
    for (std::size_t i = 0; i < N_WORDS; i++) {
        std::size_t len = 4 + g() % 45;
        std::string w;
        for (std::size_t k = 0; k < len; k++)
            w.push_back(static_cast<char>('a' + g() % 26));
        vocab.push_back(w);
    }
    std::vector<std::string> text;
    for (std::size_t i = 0; i < N_TOKENS; i++)
        text.push_back(vocab[g() % N_WORDS]);
    return text;
}

const std::vector<std::string> text = make_text();

std::uint64_t request(std::pmr::memory_resource *r) {
    std::pmr::vector<std::pmr::string> tokens(r);
    for (const std::string &w : text)
        tokens.emplace_back(w);
    std::pmr::unordered_map<std::pmr::string, int> counts(r);
    for (const std::pmr::string &t : tokens)
        ++counts[t];
    std::uint64_t sum = counts.size();
    for (const auto &[word, n] : counts)
        sum += static_cast<std::uint64_t>(n) * word.size();
    return sum;
}

double cpu_ns() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Each runner does n requests and returns the checksum of the last.
using runner = std::uint64_t (*)(long n);

std::uint64_t run_new_delete(long n) {
    std::uint64_t s = 0;
    for (long i = 0; i < n; i++)
        s = request(std::pmr::new_delete_resource());
    return s;
}

template <class Arena> std::uint64_t run_arena(long n) {
    std::uint64_t s = 0;
    for (long i = 0; i < n; i++) {
        alignas(16) std::byte buf[ARENA_BUFFER];
        Arena a(buf, sizeof buf);
        s = request(&a);
    }
    return s;
}

std::uint64_t run_arena_reset(long n) {
    alignas(16) static std::byte buf[ARENA_BUFFER];
    alloy::pmr::arena_resource a(buf, sizeof buf);
    std::uint64_t s = 0;
    for (long i = 0; i < n; i++) {
        s = request(&a);
        a.reset();
    }
    return s;
}

template <class Pool> std::uint64_t run_pool(long n) {
    Pool p;
    std::uint64_t s = 0;
    for (long i = 0; i < n; i++)
        s = request(&p);
    return s;
}

struct variant {
    const char *name;
    runner run;
    const char *counterpart;
};

const variant variants[] = {
    {"new-delete", run_new_delete, nullptr},
    {"arena", run_arena<alloy::pmr::arena_resource>, "std-arena"},
    {"std-arena", run_arena<std::pmr::monotonic_buffer_resource>, nullptr},
    {"arena-reset", run_arena_reset, "std-arena"},
    {"pool", run_pool<alloy::pmr::pool_resource>, "std-pool"},
    {"std-pool", run_pool<std::pmr::unsynchronized_pool_resource>, nullptr},
    {"sync-pool", run_pool<alloy::pmr::synchronized_pool_resource>, "std-sync-pool"},
    {"std-sync-pool", run_pool<std::pmr::synchronized_pool_resource>, nullptr},
};
constexpr int N_VARIANTS = sizeof variants / sizeof variants[0];

int find_variant(const char *name) {
    for (int v = 0; v < N_VARIANTS; v++)
        if (std::strcmp(name, variants[v].name) == 0)
            return v;
    return -1;
}

double median(std::vector<double> xs) {
    std::sort(xs.begin(), xs.end());
    std::size_t n = xs.size();
    return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

} // namespace

int main(int argc, char **argv) {
    long requests = 200;
    int rounds = 11;
    bool csv = false;
    bool selected[N_VARIANTS];
    std::fill(selected, selected + N_VARIANTS, true);
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--requests") == 0 && i + 1 < argc) {
            requests = std::atol(argv[++i]);
        } else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = std::atoi(argv[++i]);
        } else if (std::strcmp(argv[i], "--variant") == 0 && i + 1 < argc) {
            std::fill(selected, selected + N_VARIANTS, false);
            for (char *name = std::strtok(argv[++i], ","); name != nullptr;
                 name = std::strtok(nullptr, ",")) {
                int v = find_variant(name);
                if (v < 0) {
                    std::fprintf(stderr, "pmr_bench: no variant '%s'\n", name);
                    return 2;
                }
                selected[v] = true;
            }
        } else if (std::strcmp(argv[i], "--csv") == 0) {
            csv = true;
        } else {
            std::fprintf(stderr, "usage: pmr_bench [--requests N] [--rounds R] [--variant "
                                 "NAME[,NAME...]] [--csv]\n");
            return 2;
        }
    }
    if (requests < 1 || rounds < 1 || rounds > 999) {
        std::fprintf(stderr, "pmr_bench: --requests and --rounds must be positive\n");
        return 2;
    }

    std::vector<double> ns[N_VARIANTS];
    std::uint64_t sums[N_VARIANTS] = {};
    if (csv)
        std::printf("round,variant,ns_per_request\n");
    for (int r = 0; r < rounds; r++) {
        for (int j = 0; j < N_VARIANTS; j++) {
            int v = r % 2 == 0 ? j : N_VARIANTS - 1 - j;
            if (!selected[v])
                continue;
            double t0 = cpu_ns();
            sums[v] = variants[v].run(requests);
            double t = (cpu_ns() - t0) / static_cast<double>(requests);
            ns[v].push_back(t);
            if (csv)
                std::printf("%d,%s,%.0f\n", r + 1, variants[v].name, t);
        }
    }

    bool agree = true;
    int first = -1;
    std::printf("%d rounds x %ld requests; CPU us per request: median (min-max)\n", rounds,
                requests);
    for (int v = 0; v < N_VARIANTS; v++) {
        if (!selected[v])
            continue;
        if (first < 0)
            first = v;
        std::printf("%-14s %8.1f (%.1f-%.1f)\n", variants[v].name, median(ns[v]) / 1e3,
                    *std::min_element(ns[v].begin(), ns[v].end()) / 1e3,
                    *std::max_element(ns[v].begin(), ns[v].end()) / 1e3);
        agree = agree && sums[v] == sums[first];
    }
    std::printf("paired ratios time(A) / time(B) within a round, median over rounds (min-max):\n");
    auto paired = [&](int a, int b) {
        if (!selected[a] || !selected[b])
            return;
        std::vector<double> ratios;
        for (int r = 0; r < rounds; r++)
            ratios.push_back(ns[a][static_cast<std::size_t>(r)] /
                             ns[b][static_cast<std::size_t>(r)]);
        std::printf("%-14s / %-14s %.3f (%.3f-%.3f)\n", variants[a].name, variants[b].name,
                    median(ratios), *std::min_element(ratios.begin(), ratios.end()),
                    *std::max_element(ratios.begin(), ratios.end()));
    };
    for (int v = 0; v < N_VARIANTS; v++)
        if (variants[v].counterpart != nullptr)
            paired(v, find_variant(variants[v].counterpart));
    paired(find_variant("std-arena"), find_variant("new-delete"));
    paired(find_variant("arena"), find_variant("new-delete"));
    if (!agree) {
        std::fprintf(stderr, "pmr_bench: FAIL: the variants' checksums differ\n");
        return 1;
    }
    std::printf("checksums agree: %llu\n", static_cast<unsigned long long>(sums[first]));
    return 0;
}
