// Micro-benchmarks of the request path's pure and storage steps, with Google Benchmark.
// Run: bench/run.sh --micro   (or build the `bench` preset and run its micro_benchmarks)
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>

#include "auth/bearer_credentials.hpp"
#include "auth/jwt_authenticator.hpp"
#include "auth/token_registry.hpp"
#include "domain/json_encoding.hpp"
#include "domain/new_plant_decoder.hpp"
#include "store/sqlite/sqlite_plant_store.hpp"
#include "support/jwt_signer.hpp"

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

// A JWT from an identity provider, per algorithm: range(0) picks RS256, PS256, ES256 or EdDSA;
// range(1) is the verified-token cache's capacity (0: every request verifies the signature and
// claims; otherwise the first request verifies and the others hit the cache).
void check_jwt(benchmark::State& state) {
    using testing_support::SigningKey;
    static const char* const kAlgorithms[] = {"RS256", "PS256", "ES256", "EdDSA"};
    const std::string alg = kAlgorithms[state.range(0)];
    const SigningKey key(alg == "ES256"   ? SigningKey::Kind::ec_p256
                         : alg == "EdDSA" ? SigningKey::Kind::ed25519
                                          : SigningKey::Kind::rsa);
    auth::JwtAuthenticator jwt(
        {"https://idp.example/realms/plants", "plantstore", 30, "tenant", ""},
        static_cast<std::size_t>(state.range(1)));
    jwt.replace_keys(std::make_shared<const auth::KeySet>(
        auth::KeySet::parse(testing_support::jwks_document(key.jwk("k1")))));
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    // Claims of the size a Keycloak access token has (about 1 KiB once encoded).
    const std::string claims =
        R"({"exp":)" + std::to_string(now + 3600) + R"(,"iat":)" + std::to_string(now) +
        R"(,"jti":"5f1c7e3a-8f0b-4d55-a1f1-0c9d2a3b4c5d","iss":"https://idp.example/realms/plants",)"
        R"("aud":["plantstore","account"],"sub":"0b6c1f0e-4f2d-4b8e-9a7c-2f4b6d8e0a1c","typ":"Bearer",)"
        R"("azp":"plant-app","session_state":"7c9e6679-7425-40de-944b-e07fc1f90ae7","acr":"1",)"
        R"("realm_access":{"roles":["offline_access","uma_authorization"]},)"
        R"("resource_access":{"account":{"roles":["manage-account","view-profile"]}},)"
        R"("scope":"openid profile email plants:read plants:write","tenant":"acme",)"
        R"("email_verified":true,"preferred_username":"plant-app-service"})";
    std::string header = "Bearer ";
    header += testing_support::signed_jwt(key, alg, testing_support::jwt_header(alg, "k1"), claims);
    for (auto _ : state) {
        const auto credentials = auth::parse_bearer_credentials(header);
        auto caller = jwt.authenticate(credentials.token, now);
        benchmark::DoNotOptimize(caller);
    }
    state.SetLabel(alg + (state.range(1) == 0 ? " uncached" : " cached"));
}
BENCHMARK(check_jwt)->ArgsProduct({{0, 1, 2, 3}, {0, 10000}});

// Counts transactions and the writes in them.
struct BatchCounter final : store::StoreObserver {
    std::atomic<std::uint64_t> batches{0};
    std::atomic<std::uint64_t> writes{0};
    void on_batch(const store::BatchReport& batch) override {
        batches += 1;
        writes += batch.writes;
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
        options.writes.observer = &counter;
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
