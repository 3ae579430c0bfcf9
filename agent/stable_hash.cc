#include "agent/stable_hash.h"

namespace weft::agent {

uint64_t MixBits(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t StableHash(absl::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a offset basis
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;  // FNV prime
  }
  // FNV alone leaves similar names ("node-1", "node-2") close in the low bits.
  return MixBits(h);
}

}  // namespace weft::agent
