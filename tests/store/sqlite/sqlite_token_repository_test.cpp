#include "store/sqlite/sqlite_token_repository.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "support/temp_dir.hpp"

namespace plantstore::store::sqlite {
namespace {

using testing_support::TempDir;

auth::TokenRecord record(std::string name, std::string_view token) {
    return {std::move(name), auth::digest_token(token), "default", 1700000000};
}

TEST(SqliteTokenRepository, AddListRemove) {
    TempDir dir;
    SqliteTokenRepository tokens(dir.path());
    EXPECT_TRUE(tokens.add(record("b", "ps_b")));
    EXPECT_TRUE(tokens.add(record("a", "ps_a")));
    EXPECT_FALSE(tokens.add(record("a", "ps_other")));
    const auto listed = tokens.list();
    ASSERT_EQ(listed.size(), 2U);
    EXPECT_EQ(listed[0].name, "a");
    EXPECT_EQ(listed[0].digest, auth::digest_token("ps_a"));
    EXPECT_EQ(listed[0].created_at_unix, 1700000000);
    EXPECT_TRUE(tokens.remove("a"));
    EXPECT_FALSE(tokens.remove("a"));
    EXPECT_EQ(tokens.list().size(), 1U);
}

TEST(SqliteTokenRepository, KeepsTenantAndScopes) {
    TempDir dir;
    SqliteTokenRepository tokens(dir.path());
    auth::TokenRecord reader = record("reader", "ps_r");
    reader.tenant = "acme";
    reader.scopes = static_cast<auth::ScopeSet>(auth::Scope::read);
    ASSERT_TRUE(tokens.add(reader));
    const auto listed = tokens.list();
    ASSERT_EQ(listed.size(), 1U);
    EXPECT_EQ(listed[0].tenant, "acme");
    EXPECT_EQ(listed[0].scopes, static_cast<auth::ScopeSet>(auth::Scope::read));
}

TEST(SqliteTokenRepository, ChangeCountMovesAcrossConnections) {
    TempDir dir;
    SqliteTokenRepository server_side(dir.path());
    const auto before = server_side.change_count();
    SqliteTokenRepository(dir.path()).add(record("cli", "ps_cli"));
    const auto after_add = server_side.change_count();
    EXPECT_NE(after_add, before);
    SqliteTokenRepository(dir.path()).remove("cli");
    EXPECT_NE(server_side.change_count(), after_add);
}

TEST(SqliteTokenRepository, StoresOnlyTheDigest) {
    TempDir dir;
    const std::string token = "ps_this-must-never-be-stored";
    SqliteTokenRepository(dir.path()).add(record("n", token));
    // Every byte the data directory holds (database, WAL, shared memory) is free of the token.
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
        std::ifstream file(entry.path(), std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(file)), {});
        EXPECT_EQ(bytes.find(token), std::string::npos) << entry.path();
        EXPECT_EQ(bytes.find(token.substr(3)), std::string::npos) << entry.path();
    }
}

}  // namespace
}  // namespace plantstore::store::sqlite
