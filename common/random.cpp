#include "random.hpp"

#include <cstdlib>
#include <stdexcept>

namespace workbook {

namespace {
std::uint64_t splitmix64(std::uint64_t& state)
{
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

std::uint64_t fnv1a(const std::string& text)
{
    std::uint64_t h = 0xCBF29CE484222325ull;
    for (unsigned char c : text) h = (h ^ c) * 0x100000001B3ull;
    return h;
}
}  // namespace

std::uint64_t run_seed()
{
    static const std::uint64_t seed = [] {
        const char* text = std::getenv("WORKBOOK_SEED");
        if (text == nullptr || *text == '\0') return default_seed;
        char* end = nullptr;
        const unsigned long long value = std::strtoull(text, &end, 10);
        if (*end != '\0') throw std::invalid_argument("WORKBOOK_SEED must be a decimal number");
        return static_cast<std::uint64_t>(value);
    }();
    return seed;
}

std::uint64_t seed_for(const std::string& label)
{
    std::uint64_t state = run_seed() ^ fnv1a(label);
    return splitmix64(state);
}

Rng::Rng(std::uint64_t seed)
{
    for (auto& word : s_) word = splitmix64(seed);
}

std::uint64_t Rng::next()
{
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

float Rng::uniform(float lo, float hi)
{
    // 24 random bits map exactly onto the float grid of [0, 1).
    const float unit = static_cast<float>(next() >> 40) * 0x1.0p-24f;
    return lo + (hi - lo) * unit;
}

int Rng::uniform_int(int lo, int hi)
{
    const std::uint64_t span = static_cast<std::uint64_t>(static_cast<std::int64_t>(hi) - lo) + 1;
    return static_cast<int>(lo + static_cast<std::int64_t>(next() % span));
}

std::vector<float> random_floats(std::size_t count, std::uint64_t seed, float lo, float hi)
{
    Rng rng(seed);
    std::vector<float> values(count);
    for (auto& v : values) v = rng.uniform(lo, hi);
    return values;
}

std::vector<int> random_ints(std::size_t count, std::uint64_t seed, int lo, int hi)
{
    Rng rng(seed);
    std::vector<int> values(count);
    for (auto& v : values) v = rng.uniform_int(lo, hi);
    return values;
}

}  // namespace workbook
