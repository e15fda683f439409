#pragma once
// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104): how a rank and rank 0 prove to each other
// that they were given the same run id, without sending it (dist/rendezvous_handshake.h).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace translution {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest sha256(const uint8_t* data, size_t size);
Sha256Digest hmac_sha256(const std::string& key, const std::vector<uint8_t>& message);

// Whether two digests are equal, in a time that does not depend on where they differ.
bool same_digest(const Sha256Digest& a, const Sha256Digest& b);

}  // namespace translution
