#include "auth/token.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <stdexcept>

#include "common/base64.hpp"

namespace plantstore::auth {

std::string mint_token() {
    std::array<unsigned char, 32> random{};
    if (RAND_bytes(random.data(), static_cast<int>(random.size())) != 1) {
        throw std::runtime_error("the OpenSSL random generator failed");
    }
    return "ps_" + common::base64url_encode(std::string_view(
                       reinterpret_cast<const char*>(random.data()), random.size()));
}

TokenDigest digest_token(std::string_view token) {
    TokenDigest digest{};
    SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest.data());
    return digest;
}

namespace {
constexpr Scope kScopes[] = {Scope::read, Scope::write, Scope::remove, Scope::webhooks};
}

std::string_view scope_name(Scope scope) {
    switch (scope) {
        case Scope::read:
            return "plants:read";
        case Scope::write:
            return "plants:write";
        case Scope::remove:
            return "plants:delete";
        case Scope::webhooks:
            return "webhooks:manage";
    }
    return {};
}

std::optional<ScopeSet> parse_scopes(std::string_view names) {
    ScopeSet set = 0;
    while (!names.empty()) {
        const std::size_t space = names.find(' ');
        const std::string_view name = names.substr(0, space);
        names = space == std::string_view::npos ? std::string_view() : names.substr(space + 1);
        if (name.empty()) continue;
        const auto* found = std::find_if(std::begin(kScopes), std::end(kScopes),
                                         [name](Scope scope) { return scope_name(scope) == name; });
        if (found == std::end(kScopes)) return std::nullopt;
        set |= static_cast<unsigned>(*found);
    }
    return set;
}

std::string format_scopes(ScopeSet set) {
    std::string names;
    for (Scope scope : kScopes) {
        if (!has_scope(set, scope)) continue;
        if (!names.empty()) names += ' ';
        names += scope_name(scope);
    }
    return names;
}

bool valid_name(std::string_view name) {
    return !name.empty() && name.size() <= 64 &&
           name.find_first_not_of(
               "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
               std::string_view::npos;
}

bool digests_equal(const TokenDigest& a, const TokenDigest& b) {
    return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::size_t TokenDigestHash::operator()(const TokenDigest& digest) const {
    std::size_t prefix = 0;
    std::memcpy(&prefix, digest.data(), sizeof prefix);
    return prefix;
}

}  // namespace plantstore::auth
