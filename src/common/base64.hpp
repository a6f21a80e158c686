// Common (see http_text.hpp): base64 (RFC 4648), the one codec for both alphabets: standard
// with padding (webhook secrets and signatures, the webhook key file) and base64url without
// padding (plantstore's tokens, every part of a JWT). Written by hand: OpenSSL's decoder takes
// only the standard alphabet, skips whitespace and counts padding as zero bytes, and Boost has
// no public codec. Decoding accepts only the canonical form, so each byte string has exactly one
// encoding. Calls only the C++ standard library.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace plantstore::common {

namespace base64_detail {

struct Alphabet {
    std::string_view digits;
    bool padded;
};

inline constexpr Alphabet kStandard{
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", true};
inline constexpr Alphabet kUrl{"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
                               false};

inline constexpr std::uint8_t kNotADigit = 0xFF;

constexpr std::array<std::uint8_t, 256> decoding_table(std::string_view digits) {
    std::array<std::uint8_t, 256> table{};
    for (auto& entry : table) entry = kNotADigit;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        table[static_cast<unsigned char>(digits[i])] = static_cast<std::uint8_t>(i);
    }
    return table;
}

inline std::string encode(std::string_view bytes, const Alphabet& alphabet) {
    std::string text;
    text.reserve((bytes.size() + 2) / 3 * 4);
    std::uint32_t bits = 0;
    int pending = 0;  // bits in `bits` not yet written
    for (const char c : bytes) {
        bits = (bits << 8) | static_cast<unsigned char>(c);
        pending += 8;
        while (pending >= 6) {
            pending -= 6;
            text += alphabet.digits[(bits >> pending) & 0x3F];
        }
    }
    if (pending > 0) text += alphabet.digits[(bits << (6 - pending)) & 0x3F];
    if (alphabet.padded) {
        while (text.size() % 4 != 0) text += '=';
    }
    return text;
}

inline std::optional<std::string> decode(std::string_view text, const Alphabet& alphabet,
                                         const std::array<std::uint8_t, 256>& table) {
    if (alphabet.padded) {
        if (text.size() % 4 != 0) return std::nullopt;
        for (int i = 0; i < 2 && !text.empty() && text.back() == '='; ++i) text.remove_suffix(1);
    }
    if (text.size() % 4 == 1) return std::nullopt;
    std::string bytes;
    bytes.reserve(text.size() * 3 / 4);
    std::uint32_t bits = 0;
    int pending = 0;
    for (const char c : text) {
        const std::uint8_t value = table[static_cast<unsigned char>(c)];
        if (value == kNotADigit) return std::nullopt;
        bits = (bits << 6) | value;
        pending += 6;
        if (pending >= 8) {
            pending -= 8;
            bytes += static_cast<char>((bits >> pending) & 0xFF);
        }
    }
    if ((bits & ((1U << pending) - 1)) != 0) return std::nullopt;  // non-zero leftover bits
    return bytes;
}

}  // namespace base64_detail

/// `bytes` as standard base64 (RFC 4648 §4) with padding.
inline std::string base64_encode(std::string_view bytes) {
    return base64_detail::encode(bytes, base64_detail::kStandard);
}

/// The bytes canonical padded standard base64 encodes (no whitespace, '=' only as the padding
/// the length needs, zero leftover bits); nullopt otherwise.
inline std::optional<std::string> base64_decode(std::string_view text) {
    static constexpr auto kTable = base64_detail::decoding_table(base64_detail::kStandard.digits);
    return base64_detail::decode(text, base64_detail::kStandard, kTable);
}

/// `bytes` as base64url (RFC 4648 §5) without padding.
inline std::string base64url_encode(std::string_view bytes) {
    return base64_detail::encode(bytes, base64_detail::kUrl);
}

/// The bytes `text` encodes, or nullopt unless it is canonical unpadded base64url: only the
/// alphabet A-Z a-z 0-9 - _, no '=' and no whitespace, a length that is not 1 mod 4, and zero
/// bits where the last character has bits left over.
inline std::optional<std::string> base64url_decode(std::string_view text) {
    static constexpr auto kTable = base64_detail::decoding_table(base64_detail::kUrl.digits);
    return base64_detail::decode(text, base64_detail::kUrl, kTable);
}

}  // namespace plantstore::common
