#pragma once
// The file a `--master file:PATH` run meets in. c10d's FileStore keeps it as a log that
// every set or add appends to, under a lock: records of a length (4 bytes, the machine's
// order) and that many bytes, a key's then its value's. A file at the path that is not
// such a log (left by something else, or damaged) would make the store take its first
// 4 bytes for a length, allocate that much (gigabytes) and wait for keys that never
// come; it is refused before the store opens it.
#include <string>

namespace translution {

// A rendezvous file is read whole when a rank joins; a run's log is far smaller then.
constexpr unsigned long long kMaxStoreFileBytes = 64ull << 20;

// Throws translution::Error naming the path where the file there is not a regular
// file, is larger than kMaxStoreFileBytes, or is not a whole log of records. A missing
// or empty file is fine: the first rank starts it.
void check_store_file(const std::string& path);

}  // namespace translution
