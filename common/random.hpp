/// \file random.hpp
/// \brief Seeded random inputs that are the same on every machine.
///
/// One run seed drives every checker. It defaults to a fixed value, so that a student sees the
/// same data on every run; the environment variable WORKBOOK_SEED overrides it, and the grader
/// draws a fresh one on each run and prints it, so `make grade SEED=n` replays that run. Each
/// test mixes the run seed with its own label, so a test's data does not depend on which tests
/// ran before it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace workbook {

/// The seed used when WORKBOOK_SEED is not set.
constexpr std::uint64_t default_seed = 20261123;

/// \brief The seed of this run: WORKBOOK_SEED when set (decimal), otherwise default_seed.
/// \snippet common/tests/test_common.cpp seeds
std::uint64_t run_seed();

/// \brief A seed for one piece of data, derived from the run seed and a label.
/// \param label names the data, e.g. "a n=1000"; different labels give unrelated streams
/// \snippet tests/check_01_vector_add.cpp inputs
std::uint64_t seed_for(const std::string& label);

/// \brief A small, fast, portable random generator (xoshiro256**, seeded by splitmix64).
///
/// The standard library's distributions differ between implementations; this one gives the
/// same numbers everywhere, so a seed printed on one machine replays on another.
class Rng {
public:
    /// \brief Starts the stream for a seed.
    /// \param seed any 64-bit value
    explicit Rng(std::uint64_t seed);
    /// \brief The next 64 random bits.
    std::uint64_t next();
    /// \brief A double uniform in [0, 1).
    double uniform();
    /// \brief A float uniform in [lo, hi).
    /// \param lo the lower bound
    /// \param hi the upper bound
    float uniform(float lo, float hi);
    /// \brief An integer uniform in [lo, hi] (both included).
    /// \param lo the lower bound
    /// \param hi the upper bound
    int uniform_int(int lo, int hi);

private:
    std::uint64_t s_[4];
};

/// \brief count floats uniform in [lo, hi).
/// \param count how many
/// \param seed the stream's seed, usually seed_for(label)
/// \param lo the lower bound
/// \param hi the upper bound
/// \snippet tests/check_01_vector_add.cpp inputs
std::vector<float> random_floats(std::size_t count, std::uint64_t seed, float lo = -1.0f,
                                 float hi = 1.0f);

/// \brief count ints uniform in [lo, hi].
/// \param count how many
/// \param seed the stream's seed, usually seed_for(label)
/// \param lo the lower bound
/// \param hi the upper bound (included)
/// \snippet common/tests/test_common.cpp random ints
std::vector<int> random_ints(std::size_t count, std::uint64_t seed, int lo, int hi);

}  // namespace workbook
