// SPDX-License-Identifier: MIT
// stl_heavy.cpp - a C++ program that leans on the STL's allocations (maps,
// hash maps, strings, vectors, shared_ptr, sorting); its output must be the
// same on alloy and on glibc.
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

int main() {
    std::map<std::string, std::vector<int>> groups;
    std::unordered_map<int, std::string> names;
    std::vector<std::shared_ptr<std::string>> shared;
    for (int i = 0; i < 300000; i++) {
        groups[std::to_string(i % 7001)].push_back(i);
        names[i] = std::string(static_cast<size_t>(i % 257), static_cast<char>('a' + i % 26));
        if (i % 3 == 0)
            names.erase(i / 2);
        if (i % 10 == 0)
            shared.push_back(std::make_shared<std::string>(std::to_string(i)));
    }
    size_t total = 0;
    for (auto &g : groups)
        total += g.second.size() * g.first.size();
    for (auto &n : names)
        total += n.second.size();
    std::vector<std::string> words;
    for (int i = 0; i < 200000; i++)
        words.push_back(std::to_string(static_cast<long long>(i) * 7919 % 1000003));
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    std::cout << total << " " << words.size() << " " << words[1234] << " " << *shared[777] << "\n";
    return 0;
}
