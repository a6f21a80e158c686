// `plantstore export` and `import` through the real binary: a store moved to another data
// directory round-trips every plant and token exactly (and the tokens keep working there),
// importing twice changes nothing, a conflicting plant is reported and kept, and a malformed
// line stops the import with its number.
#include <fstream>

#include "fixture.hpp"

namespace plantstore::testing_support {
namespace {

class Transfer : public ServerTest {
  protected:
    std::filesystem::path write(const std::string& name, const std::string& text) {
        const auto path = dir.path() / name;
        std::ofstream(path) << text;
        return path;
    }
    CommandResult import_into(const std::filesystem::path& target,
                              const std::filesystem::path& input) {
        return run_plantstore({"import", "--data-dir", target.string()}, {}, input);
    }
};

TEST_F(Transfer, AStoreMovesExactlyAndImportingTwiceChangesNothing) {
    const std::string other = create_token(data_dir(), "other", "globex", {"plants:read"});
    const std::string globex = create_token(data_dir(), "globex-writer", "globex");
    start();
    const std::vector<std::string> bodies = {
        R"({"id":1,"name":"Fern","tag":"green"})",
        R"({"id":-9223372036854775808,"name":"smallest"})",
        R"({"id":9223372036854775807,"name":"Mons\u00e9ra \ud83c\udf31","tag":"a\"quote\\"})",
        R"({"id":42,"name":"no tag"})"};
    for (const auto& body : bodies) ASSERT_EQ(post(body).status, 200) << body;
    ASSERT_EQ(post_plant(port(), globex, R"({"id":1,"name":"Other tenant"})").status, 200);

    const auto exported = run_plantstore({"export", "--tokens", "--data-dir", data_dir().string()});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    EXPECT_NE(exported.err.find("exported 5 plants and 3 tokens"), std::string::npos)
        << exported.err;
    EXPECT_EQ(exported.out.find("ps_"), std::string::npos);  // digests, never tokens
    const auto file = write("plants.ndjson", exported.out);

    const auto target = dir.path() / "moved";
    const auto imported = import_into(target, file);
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
    EXPECT_NE(imported.err.find("imported 5 plants"), std::string::npos) << imported.err;
    const auto again = import_into(target, file);
    EXPECT_EQ(again.exit_code, 0);
    EXPECT_NE(again.err.find("imported 0 plants into " + target.string() + " (5 already there"),
              std::string::npos)
        << again.err;
    const auto missing = run_plantstore({"export", "--data-dir", (dir.path() / "typo").string()});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.err.find("no plantstore store"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "typo"));
    const auto round_trip = run_plantstore({"export", "--tokens", "--data-dir", target.string()});
    EXPECT_EQ(round_trip.out, exported.out);  // byte for byte, creation times included

    ServerProcess moved(target);  // the old tokens work there, and see the same plants
    HttpConnection connection(moved.port());
    const auto list = connection.request("GET", "/plants", "", {"Authorization: Bearer " + token});
    ASSERT_TRUE(list);
    EXPECT_EQ(
        list->body,
        R"([{"id":-9223372036854775808,"name":"smallest"},{"id":1,"name":"Fern","tag":"green"},)"
        R"({"id":42,"name":"no tag"},{"id":9223372036854775807,"name":"Monséra 🌱","tag":"a\"quote\\"}])");
    const auto other_tenant =
        connection.request("GET", "/plants/1", "", {"Authorization: Bearer " + other});
    ASSERT_TRUE(other_tenant);
    EXPECT_EQ(other_tenant->body, R"({"id":1,"name":"Other tenant"})");
}

TEST_F(Transfer, ConflictsAreReportedAndKeptAndBadLinesStopTheImport) {
    start();
    ASSERT_EQ(post(R"({"id":1,"name":"Fern"})").status, 200);
    server->stop(SIGTERM);
    const auto conflicting = write(
        "conflict.ndjson",
        R"({"tenant":"default","id":1,"name":"Not a fern","created_at":"2026-11-24T01:02:03.456Z"})"
        "\n"
        R"({"tenant":"default","id":2,"name":"New","created_at":"2026-11-24T01:02:03Z"})"
        "\n");
    const auto result = import_into(data_dir(), conflicting);
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find(
                  "plantstore: line 1: tenant default already has a different plant with id 1 "
                  "(kept)"),
              std::string::npos)
        << result.err;
    EXPECT_NE(result.err.find("imported 1 plants"), std::string::npos) << result.err;

    const std::vector<std::pair<std::string, std::string>> bad = {
        {"[1,2]", "line 2: not a JSON object"},
        {R"({"tenant":"default","id":3,"created_at":"2026-11-24T01:02:03Z"})", "line 2: name"},
        {R"({"tenant":"no spaces allowed","id":3,"name":"x","created_at":"2026-11-24T01:02:03Z"})",
         "line 2: tenant must be"},
        {R"({"tenant":"default","id":3,"name":"x","created_at":"yesterday"})",
         "line 2: created_at must be"},
        {R"({"token_name":"t","tenant":"default","scopes":"plants:read","token_digest":"AAAA","created_at":"2026-11-24T01:02:03Z"})",
         "line 2: token_digest"}};
    for (const auto& [line, message] : bad) {
        const auto input = write(
            "bad.ndjson",
            R"({"tenant":"default","id":7,"name":"before","created_at":"2026-11-24T01:02:03Z"})"
            "\n" +
                line + "\n");
        const auto stopped = import_into(data_dir(), input);
        EXPECT_EQ(stopped.exit_code, 2) << line;
        EXPECT_NE(stopped.err.find(message), std::string::npos) << stopped.err;
    }
    start();
    HttpConnection connection(port());
    const auto kept =
        connection.request("GET", "/plants/1", "", {"Authorization: Bearer " + token});
    ASSERT_TRUE(kept);
    EXPECT_EQ(kept->body, R"({"id":1,"name":"Fern"})");  // not overwritten
    const auto before =
        connection.request("GET", "/plants/7", "", {"Authorization: Bearer " + token});
    ASSERT_TRUE(before);
    EXPECT_EQ(before->status, 200);  // the line before a bad one was imported
}

}  // namespace
}  // namespace plantstore::testing_support
