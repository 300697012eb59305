// Stream prefetch's tunables (see prefetch_tunables.h).
#include "cache/prefetch_tunables.h"

namespace uzfs {

namespace {

const TunableDef kPrefetchTunables[] = {
    {"zfetch_disable", TunableKind::kBool, 0, nullptr, 0, 1, "Turn off stream prefetch."},
    {"zfetch_max_streams", TunableKind::kCount, 8, nullptr, 1, 256, "Concurrent prefetch streams per file."},
    {"zfetch_min_distance", TunableKind::kSize, 4ull << 20, nullptr, 0, 1ull << 30,
     "Read-ahead distance of a new stream (bytes)."},
    {"zfetch_max_distance", TunableKind::kSize, 64ull << 20, nullptr, 0, 1ull << 30,
     "Largest read-ahead distance a stream grows to (bytes)."},
    {"zfetch_max_stride", TunableKind::kCount, 64, nullptr, 1, 1u << 20,
     "Largest stride (in blocks) a strided stream may have."},
};

}  // namespace

std::span<const TunableDef> PrefetchTunableDefs() { return kPrefetchTunables; }

PrefetchOptions PrefetchOptionsFromTunables(const Tunables& t, uint64_t block_size) {
  return PrefetchOptionsForBlockSize(block_size, t.GetOrDie("zfetch_min_distance"),
                                     t.GetOrDie("zfetch_max_distance"),
                                     static_cast<unsigned>(t.GetOrDie("zfetch_max_streams")),
                                     t.GetOrDie("zfetch_max_stride"));
}

}  // namespace uzfs
