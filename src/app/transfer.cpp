#include "app/transfer.hpp"

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cstdio>
#include <ctime>
#include <istream>
#include <ostream>
#include <vector>

#include "auth/token.hpp"
#include "common/base64.hpp"
#include "common/time_text.hpp"
#include "domain/new_plant_decoder.hpp"
#include "store/plant_archive.hpp"
#include "store/token_repository.hpp"

namespace plantstore::app {

namespace json = boost::json;

namespace {

constexpr std::size_t kPlantsPerTransaction = 1000;

// The inverse of rfc3339 (either form); nullopt for anything else.
std::optional<std::int64_t> parse_rfc3339_ms(std::string_view text) {
    int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, consumed = 0;
    const std::string copy(text);
    if (std::sscanf(copy.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute,
                    &second, &consumed) != 6 ||
        consumed != 19 || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 ||
        minute > 59 || second > 60) {
        return std::nullopt;
    }
    std::string_view rest = text.substr(19);
    int millis = 0;
    if (rest.size() == 5 && rest[0] == '.') {
        for (const char c : rest.substr(1, 3)) {
            if (c < '0' || c > '9') return std::nullopt;
            millis = millis * 10 + (c - '0');
        }
        rest.remove_prefix(4);
    }
    if (rest != "Z") return std::nullopt;
    std::tm parts{};
    parts.tm_year = year - 1900;
    parts.tm_mon = month - 1;
    parts.tm_mday = day;
    parts.tm_hour = hour;
    parts.tm_min = minute;
    parts.tm_sec = second;
    return static_cast<std::int64_t>(timegm(&parts)) * 1000 + millis;
}

const json::string* string_field(const json::object& object, std::string_view name) {
    const json::value* value = object.if_contains(name);
    return value != nullptr && value->is_string() ? &value->get_string() : nullptr;
}

std::int64_t created_at(const json::object& object, std::size_t line) {
    const json::string* text = string_field(object, "created_at");
    const auto parsed = text ? parse_rfc3339_ms(*text) : std::nullopt;
    if (!parsed) {
        throw ImportError(line,
                          "created_at must be an RFC 3339 UTC time such as "
                          "2026-11-24T01:02:03.456Z");
    }
    return *parsed;
}

auth::TokenRecord token_record(const json::object& object, std::size_t line) {
    const json::string* name = string_field(object, "token_name");
    const json::string* tenant = string_field(object, "tenant");
    const json::string* scopes_text = string_field(object, "scopes");
    const json::string* digest_text = string_field(object, "token_digest");
    if (name == nullptr || !auth::valid_name(*name) || tenant == nullptr ||
        !auth::valid_name(*tenant)) {
        throw ImportError(line, "token_name and tenant must be 1 to 64 of A-Z a-z 0-9 . _ -");
    }
    const auto scopes = scopes_text ? auth::parse_scopes(*scopes_text) : std::nullopt;
    if (!scopes) throw ImportError(line, "scopes must be space-separated plantstore scopes");
    const auto digest = digest_text ? common::base64url_decode(*digest_text) : std::nullopt;
    if (!digest || digest->size() != 32) {
        throw ImportError(line, "token_digest must be the base64url of a 32-byte SHA-256");
    }
    auth::TokenRecord record;
    record.name = std::string(*name);
    record.tenant = std::string(*tenant);
    record.scopes = *scopes;
    std::copy(digest->begin(), digest->end(), record.digest.begin());
    record.created_at_unix = created_at(object, line) / 1000;
    return record;
}

}  // namespace

ExportCounts export_store(store::PlantArchive& archive, store::TokenRepository* tokens,
                          std::ostream& out) {
    ExportCounts counts;
    archive.for_each_plant([&](const store::StoredPlant& stored) {
        json::object line;
        line["tenant"] = stored.tenant;
        line["id"] = stored.id;
        line["name"] = stored.plant.name;
        if (stored.plant.tag) line["tag"] = *stored.plant.tag;
        line["created_at"] = common::rfc3339(stored.created_at_ms, true);
        out << json::serialize(line) << '\n';
        ++counts.plants;
    });
    if (tokens != nullptr) {
        for (const auto& record : tokens->list()) {
            json::object line;
            line["token_name"] = record.name;
            line["tenant"] = record.tenant;
            line["scopes"] = auth::format_scopes(record.scopes);
            line["token_digest"] = common::base64url_encode(std::string_view(
                reinterpret_cast<const char*>(record.digest.data()), record.digest.size()));
            line["created_at"] = common::rfc3339(record.created_at_unix * 1000, false);
            out << json::serialize(line) << '\n';
            ++counts.tokens;
        }
    }
    out.flush();
    if (!out) throw std::runtime_error("cannot write the export");
    return counts;
}

ImportCounts import_store(std::istream& in, store::PlantArchive& archive,
                          store::TokenRepository& tokens, const domain::FieldLimits& limits,
                          std::ostream& report) {
    ImportCounts counts;
    std::vector<store::StoredPlant> pending;
    std::vector<std::size_t> pending_lines;
    const auto flush = [&] {
        if (pending.empty()) return;
        const auto outcomes = archive.import_plants(pending);
        for (std::size_t i = 0; i < outcomes.size(); ++i) {
            switch (outcomes[i]) {
                case store::PlantArchive::Outcome::inserted:
                    ++counts.inserted;
                    break;
                case store::PlantArchive::Outcome::identical:
                    ++counts.identical;
                    break;
                case store::PlantArchive::Outcome::conflict:
                    ++counts.conflicts;
                    report << "plantstore: line " << pending_lines[i] << ": tenant "
                           << pending[i].tenant << " already has a different plant with id "
                           << pending[i].id << " (kept)\n";
                    break;
            }
        }
        pending.clear();
        pending_lines.clear();
    };

    std::string text;
    std::size_t number = 0;
    try {
        while (std::getline(in, text)) {
            ++number;
            if (text.empty()) continue;
            json::parse_options options;
            options.max_depth = domain::kMaxNestingDepth;
            boost::system::error_code error;
            const json::value value = json::parse(text, error, {}, options);
            if (error || !value.is_object()) throw ImportError(number, "not a JSON object");
            const json::object& object = value.get_object();
            if (object.contains("token_name")) {
                const auth::TokenRecord record = token_record(object, number);
                if (tokens.add(record)) {
                    ++counts.tokens_added;
                    continue;
                }
                bool same = false;
                for (const auto& existing : tokens.list()) {
                    if (existing.name == record.name) {
                        same = auth::digests_equal(existing.digest, record.digest);
                    }
                }
                if (same) {
                    ++counts.tokens_present;
                } else {
                    ++counts.token_conflicts;
                    report << "plantstore: line " << number << ": a different token named "
                           << record.name << " exists (kept)\n";
                }
                continue;
            }
            const json::string* tenant = string_field(object, "tenant");
            if (tenant == nullptr || !auth::valid_name(*tenant)) {
                throw ImportError(number, "tenant must be 1 to 64 of A-Z a-z 0-9 . _ -");
            }
            auto decoded = domain::decode_new_plant(text, limits);
            if (const auto* problem = std::get_if<domain::DecodeError>(&decoded)) {
                throw ImportError(number, problem->message);
            }
            auto& plant = std::get<domain::NewPlant>(decoded);
            pending.push_back({std::string(*tenant), plant.id, std::move(plant.plant),
                               created_at(object, number)});
            pending_lines.push_back(number);
            if (pending.size() >= kPlantsPerTransaction) flush();
        }
    } catch (const ImportError&) {
        flush();  // the lines before the bad one are imported, as documented
        throw;
    }
    flush();
    if (in.bad()) throw std::runtime_error("cannot read the input");
    return counts;
}

}  // namespace plantstore::app
