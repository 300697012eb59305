// Explicit byte-order load/store helpers. On-disk structures are encoded
// field by field with these, never by memcpy of structs. uzfs writes
// little-endian; readers take the byte order a structure declares.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace uzfs {

static_assert(std::endian::native == std::endian::little,
              "uzfs currently builds only on little-endian hosts");

constexpr uint16_t ByteSwap16(uint16_t v) { return __builtin_bswap16(v); }
constexpr uint32_t ByteSwap32(uint32_t v) { return __builtin_bswap32(v); }
constexpr uint64_t ByteSwap64(uint64_t v) { return __builtin_bswap64(v); }

inline uint16_t LoadLE16(const void* p) { uint16_t v; std::memcpy(&v, p, 2); return v; }
inline uint32_t LoadLE32(const void* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
inline uint64_t LoadLE64(const void* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }
inline uint16_t LoadBE16(const void* p) { return ByteSwap16(LoadLE16(p)); }
inline uint32_t LoadBE32(const void* p) { return ByteSwap32(LoadLE32(p)); }
inline uint64_t LoadBE64(const void* p) { return ByteSwap64(LoadLE64(p)); }

// A field of a structure whose byte order is known only at run time
// (big_endian: written by a big-endian host).
inline uint16_t Load16(const void* p, bool big_endian) { return big_endian ? LoadBE16(p) : LoadLE16(p); }
inline uint32_t Load32(const void* p, bool big_endian) { return big_endian ? LoadBE32(p) : LoadLE32(p); }
inline uint64_t Load64(const void* p, bool big_endian) { return big_endian ? LoadBE64(p) : LoadLE64(p); }

inline void StoreLE16(void* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline void StoreLE32(void* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void StoreLE64(void* p, uint64_t v) { std::memcpy(p, &v, 8); }
inline void StoreBE16(void* p, uint16_t v) { StoreLE16(p, ByteSwap16(v)); }
inline void StoreBE32(void* p, uint32_t v) { StoreLE32(p, ByteSwap32(v)); }
inline void StoreBE64(void* p, uint64_t v) { StoreLE64(p, ByteSwap64(v)); }

}  // namespace uzfs
