// Webhook layer: the rules of webhook delivery that involve no I/O: signing (Standard Webhooks),
// subscription URLs, the retry schedule and which addresses a delivery may reach. Pure: may call
// OpenSSL's HMAC and CSPRNG and Boost.URL, nothing else of plantstore but the common layer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plantstore::webhooks {

/// A new signing secret in the Standard Webhooks form: "whsec_" followed by the standard base64
/// of 32 bytes from OpenSSL's CSPRNG. @throws std::runtime_error if the CSPRNG fails
std::string new_secret();

/// The key a "whsec_..." secret stands for (the bytes its base64 encodes, 24 to 64 of them);
/// nullopt when it is not such a secret.
std::optional<std::string> secret_key(std::string_view secret);

/// One Standard Webhooks signature: "v1," followed by the base64 of HMAC-SHA256 with `key` over
/// "<id>.<timestamp>.<body>", the exact bytes sent.
std::string sign(std::string_view key, std::string_view id, std::int64_t timestamp,
                 std::string_view body);

/// The webhook-signature header: one signature per key, space-separated (several during a secret
/// rotation, so receivers holding either secret can verify).
std::string signature_header(const std::vector<std::string>& keys, std::string_view id,
                             std::int64_t timestamp, std::string_view body);

}  // namespace plantstore::webhooks
