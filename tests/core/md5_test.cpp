#include "util/md5.h"

#include <string>

#include <gtest/gtest.h>

using translution::Md5;
using translution::md5_hex;

// Test vectors from RFC 1321, appendix A.5.
TEST(Md5, MatchesRfc1321Vectors) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "d41d8cd98f00b204e9800998ecf8427e"},
      {"a", "0cc175b9c0f1b6a831c399e269772661"},
      {"abc", "900150983cd24fb0d6963f7d28e17f72"},
      {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
      {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
      {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
       "57edf4a22be3c955ac49da2e2107b67a"},
  };
  for (const auto& [input, digest] : cases) EXPECT_EQ(md5_hex(input.data(), input.size()), digest) << input;
}

TEST(Md5, ChunkedUpdatesEqualOneShot) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += char('a' + i % 26);
  Md5 chunked;
  for (size_t pos = 0; pos < text.size(); pos += 37)
    chunked.update(text.data() + pos, std::min<size_t>(37, text.size() - pos));
  EXPECT_EQ(chunked.hex_digest(), md5_hex(text.data(), text.size()));
}
