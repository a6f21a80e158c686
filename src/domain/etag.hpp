// Domain layer (see plant.hpp): a plant's entity tag. Pure computation (a SHA-256 digest from
// OpenSSL's libcrypto); no I/O.
#pragma once

#include <string>

#include "domain/plant.hpp"

namespace plantstore::domain {

/// The strong entity tag (RFC 9110 §8.8.3) of `plant`'s representation, quoted, e.g.
/// "\"3f2a...\"" (32 hex digits): the first 128 bits of SHA-256 over the plant's content in an
/// unambiguous form, `<bytes of name>:<name>` then `<bytes of tag>:<tag>` or `-` without a tag.
/// It changes whenever the name or the tag changes and is the same for the same content, so a
/// plant deleted and created again with other content never matches an old tag, and an update
/// that changes nothing keeps it. The PostgreSQL engine computes the same value in SQL
/// (store/postgres/statements.hpp, kPlantEtagSql); the store contract tests hold both to it.
std::string plant_etag(const Plant& plant);

}  // namespace plantstore::domain
