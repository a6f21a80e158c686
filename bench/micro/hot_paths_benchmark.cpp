// Micro-benchmarks of the request path's pure and storage steps, with Google Benchmark.
// Run: bench/run.sh --micro   (or build the `bench` preset and run its micro_benchmarks)
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>

#include "auth/bearer_credentials.hpp"
#include "auth/token_registry.hpp"
#include "domain/json_encoding.hpp"
#include "domain/new_plant_decoder.hpp"
#include "store/sqlite/sqlite_plant_store.hpp"

namespace plantstore {
namespace {

constexpr std::string_view kBody = R"({"id":123456789,"name":"Monstera deliciosa","tag":"aroid"})";

void decode_and_validate_new_plant(benchmark::State& state) {
    const domain::FieldLimits limits;
    for (auto _ : state) {
        auto decoded = domain::decode_new_plant(kBody, limits);
        benchmark::DoNotOptimize(decoded);
    }
}
BENCHMARK(decode_and_validate_new_plant);

void encode_plant(benchmark::State& state) {
    const domain::Plant plant{"Monstera deliciosa", "aroid"};
    for (auto _ : state) {
        auto encoded = domain::encode_plant(plant);
        benchmark::DoNotOptimize(encoded);
    }
}
BENCHMARK(encode_plant);

void check_bearer_token(benchmark::State& state) {
    auth::TokenRegistry registry;
    const std::string token = auth::mint_token();
    std::vector<auth::TokenRecord> records;
    for (int i = 0; i < state.range(0); ++i) {
        // std::to_string, not "t" + ...: GCC 12 reports a false -Wrestrict on the latter.
        records.push_back(
            {std::to_string(i), auth::digest_token(auth::mint_token()), "default", 0});
    }
    records.push_back({"mine", auth::digest_token(token), "default", 0});
    registry.replace(std::move(records));
    std::string header = "Bearer ";
    header += token;
    for (auto _ : state) {
        const auto credentials = auth::parse_bearer_credentials(header);
        auto caller = registry.authenticate(credentials.token);
        benchmark::DoNotOptimize(caller);
    }
}
BENCHMARK(check_bearer_token)->Arg(1)->Arg(1000);

// Counts transactions and the writes in them.
struct BatchCounter final : store::StoreObserver {
    std::atomic<std::uint64_t> batches{0};
    std::atomic<std::uint64_t> writes{0};
    void on_batch(std::size_t count, std::chrono::nanoseconds, std::string_view) override {
        batches += 1;
        writes += count;
    }
    void on_maintenance_failed(std::string_view) override {}
};

// One transaction of `range(0)` creates, fsync included: the cost group commit amortizes.
void commit_batch(benchmark::State& state) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("plantstore-micro-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    {
        BatchCounter counter;
        store::sqlite::SqlitePlantStore::Options options;
        options.data_dir = dir;
        options.observer = &counter;
        store::sqlite::SqlitePlantStore store(options);
        std::int64_t next_id = 0;
        const auto batch = static_cast<std::size_t>(state.range(0));
        for (auto _ : state) {
            std::vector<std::promise<void>> done(batch);
            for (auto& promise : done) {
                store.create("default", {next_id++, {"Monstera deliciosa", "aroid"}},
                             [&promise](store::WriteResult) { promise.set_value(); });
            }
            for (auto& promise : done) promise.get_future().wait();
        }
        state.SetItemsProcessed(state.iterations() * state.range(0));
        state.counters["creates_per_commit"] =
            static_cast<double>(counter.writes.load()) /
            static_cast<double>(std::max<std::uint64_t>(counter.batches.load(), 1));
    }
    std::filesystem::remove_all(dir);
}
BENCHMARK(commit_batch)->Arg(1)->Arg(16)->Arg(256)->UseRealTime();

}  // namespace
}  // namespace plantstore

BENCHMARK_MAIN();
