#include "auth/base64url.hpp"

#include <array>
#include <cstdint>

namespace plantstore::auth {

namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

constexpr std::uint8_t kNotInAlphabet = 0xFF;

constexpr std::array<std::uint8_t, 256> decoding_table() {
    std::array<std::uint8_t, 256> table{};
    for (auto& entry : table) entry = kNotInAlphabet;
    for (std::size_t i = 0; i < kAlphabet.size(); ++i) {
        table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::uint8_t>(i);
    }
    return table;
}

constexpr auto kDecoding = decoding_table();

}  // namespace

std::string base64url_encode(std::string_view bytes) {
    std::string text;
    text.reserve((bytes.size() * 4 + 2) / 3);
    std::uint32_t bits = 0;
    int pending = 0;  // bits in `bits` not yet written
    for (const char c : bytes) {
        bits = (bits << 8) | static_cast<unsigned char>(c);
        pending += 8;
        while (pending >= 6) {
            pending -= 6;
            text += kAlphabet[(bits >> pending) & 0x3F];
        }
    }
    if (pending > 0) text += kAlphabet[(bits << (6 - pending)) & 0x3F];
    return text;
}

std::optional<std::string> base64url_decode(std::string_view text) {
    if (text.size() % 4 == 1) return std::nullopt;
    std::string bytes;
    bytes.reserve(text.size() * 3 / 4);
    std::uint32_t bits = 0;
    int pending = 0;
    for (const char c : text) {
        const std::uint8_t value = kDecoding[static_cast<unsigned char>(c)];
        if (value == kNotInAlphabet) return std::nullopt;
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

}  // namespace plantstore::auth
