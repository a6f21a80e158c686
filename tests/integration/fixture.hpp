// Integration test support: a fresh data directory, a token and a running server per test.
#pragma once

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>

#include "server_process.hpp"
#include "support/postgres.hpp"
#include "support/temp_dir.hpp"

namespace plantstore::testing_support {

/// Whether the server's resident memory can be bounded in a test: the ASan and TSan runtimes
/// keep freed memory in quarantine (up to 256 MiB for ASan), so memory bounds are checked in
/// the other builds only. GCC says so with __SANITIZE_*__, clang (the ASan build) with
/// __has_feature.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PLANTSTORE_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || \
    defined(PLANTSTORE_TEST_SANITIZED)
inline constexpr bool kResidentMemoryIsBounded = false;
#else
inline constexpr bool kResidentMemoryIsBounded = true;
#endif

/// A NewPlant body for `id` whose name length and tag (present for two ids in three) vary with
/// the id, so that a torn or mixed-up write could not go unnoticed.
inline std::string varied_plant_body(std::int64_t id) {
    const std::string name = "plant " + std::to_string(id) + std::string(id % 50, 'n');
    std::string body = R"({"id":)" + std::to_string(id) + R"(,"name":")" + name + '"';
    if (id % 3 != 0) body += R"(,"tag":"tag-)" + std::to_string(id % 11) + '"';
    return body + '}';
}

/// Every plant the token's tenant holds, through the server on `port`, read page by page (1,000
/// per request) on one connection, by id. @throws std::runtime_error when a page is not a 200
inline std::map<std::int64_t, boost::json::value> list_all_plants(unsigned short port,
                                                                  const std::string& token) {
    std::map<std::int64_t, boost::json::value> stored;
    HttpConnection connection(port);
    std::string after;
    for (int page = 0; page < 1000; ++page) {
        const auto response = connection.request("GET", "/plants?limit=1000" + after, "",
                                                 {"Authorization: Bearer " + token});
        if (!response || response->status != 200) throw std::runtime_error("list failed");
        const auto plants = boost::json::parse(response->body).as_array();
        for (const auto& plant : plants) stored[plant.at("id").as_int64()] = plant;
        if (plants.size() < 1000) break;
        after = "&after=" + std::to_string(plants.back().at("id").as_int64());
    }
    return stored;
}

/// A test with a token and, once start() is called, a running server. Run with
/// PLANTSTORE_TEST_ENGINE=postgres (ctest's Postgres.* tests), the store is a fresh database in
/// the throwaway cluster instead: PLANTSTORE_DATABASE_URL, set for the test's duration, points
/// every plantstore command the test runs at it. The store and its token are a copy of one made
/// by `plantstore token create` once per build (copy_template_store, template_database): a
/// command per test cost the sanitizer builds a process each, 28% of the CPU of 126 tests of
/// the TSan build (99 against 70 s, two interleaved rounds).
class ServerTest : public testing::Test {
  protected:
    void SetUp() override {
        if (testing_on_postgres()) {
            const std::string cluster = shared_cluster_url();
            auto [copy_of, minted] = template_database(cluster);
            database = std::make_unique<TestDatabase>(cluster, copy_of);
            ::setenv("PLANTSTORE_DATABASE_URL", database->url().c_str(), 1);
            token = std::move(minted);
        } else {
            token = copy_template_store(data_dir());
        }
    }
    void TearDown() override { ::unsetenv("PLANTSTORE_DATABASE_URL"); }

    void start(std::vector<std::string> extra_args = {}) {
        server = std::make_unique<ServerProcess>(data_dir(), std::move(extra_args));
    }
    std::filesystem::path data_dir() const { return dir.path() / "data"; }
    unsigned short port() const { return server->port(); }

    HttpResponse post(const std::string& body, const std::string& path = "/plants") {
        return post_plant(port(), token, body, path);
    }
    /// Creates plants 1 to `count` whose name and tag are the longest the default allows, 1,024
    /// control characters each (six bytes each in JSON, \u0001): the largest events and pages.
    void create_largest_plants(int count) {
        std::string escaped;
        for (int i = 0; i < 1024; ++i) escaped += "\\u0001";
        for (int id = 1; id <= count; ++id) {
            ASSERT_EQ(post(R"({"id":)" + std::to_string(id) + R"(,"name":")" + escaped +
                           R"(","tag":")" + escaped + R"("})")
                          .status,
                      200);
        }
    }
    /// Runs `sql` on the test's store, whichever engine it is, behind the server's back.
    void run_store_sql(const std::string& sql) {
        if (testing_on_postgres()) {
            database->query(sql);
        } else {
            run_sqlite(data_dir(), sql);
        }
    }

    TempDir dir;
    std::unique_ptr<TestDatabase> database;  ///< on PostgreSQL; dropped after the server stops
    std::string token;
    std::unique_ptr<ServerProcess> server;
};

/// The environment that points a plantstore command at the PostgreSQL database `url`.
inline std::vector<std::string> database_environment(const std::string& url) {
    return {"PLANTSTORE_DATABASE_URL=" + url};
}

/// Mints a token through `plantstore token create` on the PostgreSQL database `url`.
inline std::string mint(const std::string& url, const std::string& name,
                        const std::string& tenant = "default") {
    const auto result = run_plantstore({"token", "create", "--name", name, "--tenant", tenant},
                                       database_environment(url));
    if (result.exit_code != 0) throw std::runtime_error("token create failed: " + result.err);
    std::string token = result.out;
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) {
        token.pop_back();
    }
    return token;
}

/// The status of a GET of `target` with `token` through `port` on a fresh connection (0: no
/// answer).
inline int get_status(unsigned short port, const std::string& token, const std::string& target) {
    HttpConnection connection(port);
    const auto response = connection.request("GET", target, "", {"Authorization: Bearer " + token});
    return response ? response->status : 0;
}

/// Asserts the Error shape: JSON content type, exactly {"error": status, "message": string},
/// and that the message contains `message_part`.
inline void expect_error(const HttpResponse& response, int status,
                         const std::string& message_part = "") {
    EXPECT_EQ(response.status, status) << response.body;
    EXPECT_EQ(response.header("content-type"), "application/json");
    boost::json::error_code ec;
    const auto value = boost::json::parse(response.body, ec);
    ASSERT_FALSE(ec) << response.body;
    ASSERT_TRUE(value.is_object()) << response.body;
    const auto& object = value.as_object();
    EXPECT_EQ(object.size(), 2U) << response.body;
    ASSERT_TRUE(object.contains("error") && object.at("error").is_int64()) << response.body;
    EXPECT_EQ(object.at("error").as_int64(), status);
    ASSERT_TRUE(object.contains("message") && object.at("message").is_string()) << response.body;
    EXPECT_NE(std::string(object.at("message").as_string()).find(message_part), std::string::npos)
        << response.body;
}

}  // namespace plantstore::testing_support
