// App layer (see main.cpp): `plantstore export` and `import`, moving every plant (and
// token digest) of a store through NDJSON, one JSON object per line.
//   plant:
//   {"tenant":"acme","id":1,"name":"Fern","tag":"green","created_at":"2026-11-24T01:02:03.456Z"}
//   token: {"token_name":"ci","tenant":"acme","scopes":"plants:read","token_digest":"<base64url
//           of the SHA-256>","created_at":"2026-11-24T01:02:03Z"}
#pragma once

#include <cstddef>
#include <iosfwd>
#include <stdexcept>
#include <string>

#include "domain/plant.hpp"

namespace plantstore::store {
class PlantArchive;
class TokenRepository;
}  // namespace plantstore::store

namespace plantstore::app {

struct ExportCounts {
    std::size_t plants = 0;
    std::size_t tokens = 0;
};

/// Writes every plant of `archive`, then (when `tokens` is not null) every token record.
/// @throws std::exception from the store
ExportCounts export_store(store::PlantArchive& archive, store::TokenRepository* tokens,
                          std::ostream& out);

struct ImportCounts {
    std::size_t inserted = 0;   ///< plants added
    std::size_t identical = 0;  ///< plants already there, the same
    std::size_t conflicts = 0;  ///< plants whose tenant and id hold a different plant: kept
    std::size_t tokens_added = 0;
    std::size_t tokens_present = 0;   ///< the same name and digest already there
    std::size_t token_conflicts = 0;  ///< the name exists with another digest: kept
};

/// A line that is not an export record: its number and what is wrong.
class ImportError : public std::runtime_error {
  public:
    ImportError(std::size_t line, const std::string& problem)
        : std::runtime_error("line " + std::to_string(line) + ": " + problem), line_(line) {}
    std::size_t line() const { return line_; }

  private:
    std::size_t line_;
};

/// Reads export lines from `in` and adds what is missing, 1,000 plants per durable transaction.
/// Never overwrites: each conflict is named on `report` and counted. Plants obey `limits` as a
/// create would. @throws ImportError at the first malformed line (the lines before it are
/// imported; importing again is harmless), std::exception from the store
ImportCounts import_store(std::istream& in, store::PlantArchive& archive,
                          store::TokenRepository& tokens, const domain::FieldLimits& limits,
                          std::ostream& report);

}  // namespace plantstore::app
