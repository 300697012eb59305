// RenderArcStats: arcstats as the text of /proc/spl/kstat/zfs/arcstats.
#include <chrono>
#include <cinttypes>
#include <cstdio>

#include "cache/arc.h"

namespace uzfs {

std::string RenderArcStats(const ArcStats& s) {
  const std::pair<const char*, uint64_t> rows[] = {
      {"hits", s.hits},
      {"misses", s.misses},
      {"demand_data_hits", s.demand_data_hits},
      {"demand_data_misses", s.demand_data_misses},
      {"demand_metadata_hits", s.demand_metadata_hits},
      {"demand_metadata_misses", s.demand_metadata_misses},
      {"prefetch_data_hits", s.prefetch_data_hits},
      {"prefetch_data_misses", s.prefetch_data_misses},
      {"prefetch_metadata_hits", s.prefetch_metadata_hits},
      {"prefetch_metadata_misses", s.prefetch_metadata_misses},
      {"mru_hits", s.mru_hits},
      {"mru_ghost_hits", s.mru_ghost_hits},
      {"mfu_hits", s.mfu_hits},
      {"mfu_ghost_hits", s.mfu_ghost_hits},
      {"deleted", s.deleted},
      {"evict_skip", s.evict_skip},
      {"evict_l2_ineligible", s.evicted_mru + s.evicted_mfu},
      {"evicted_mru", s.evicted_mru},
      {"evicted_mfu", s.evicted_mfu},
      {"hash_elements", s.hash_elements},
      {"p", s.p},
      {"c", s.c},
      {"c_min", s.c_min},
      {"c_max", s.c_max},
      {"size", s.size},
      {"compressed_size", s.compressed_size},
      {"uncompressed_size", s.uncompressed_size},
      {"overhead_size", s.overhead_size},
      {"hdr_size", s.hdr_size},
      {"data_size", s.data_size},
      {"metadata_size", s.metadata_size},
      {"mru_size", s.mru_size},
      {"mru_data", s.mru_data},
      {"mru_metadata", s.mru_metadata},
      {"mru_ghost_size", s.mru_ghost_size},
      {"mfu_size", s.mfu_size},
      {"mfu_data", s.mfu_data},
      {"mfu_metadata", s.mfu_metadata},
      {"mfu_ghost_size", s.mfu_ghost_size},
      {"l2_hits", s.l2_hits},
      {"l2_misses", s.l2_misses},
      {"l2_feeds", s.l2_feeds},
      {"l2_read_bytes", s.l2_read_bytes},
      {"l2_write_bytes", s.l2_write_bytes},
      {"l2_writes_sent", s.l2_writes_sent},
      {"l2_writes_done", s.l2_writes_done},
      {"l2_writes_error", s.l2_writes_error},
      {"l2_evict_reading", s.l2_evict_reading},
      {"l2_evicted", s.l2_evicted},
      {"l2_cksum_bad", s.l2_cksum_bad},
      {"l2_io_error", s.l2_io_error},
      {"l2_size", s.l2_size},
      {"l2_asize", s.l2_asize},
      {"l2_hdr_size", s.l2_hdr_size},
      {"l2_log_blk_writes", s.l2_log_blk_writes},
      {"l2_log_blk_avg_asize", s.l2_log_blk_writes ? s.l2_log_blk_asize / s.l2_log_blk_writes : 0},
      {"l2_log_blk_asize", s.l2_log_blk_asize},
      {"l2_log_blk_count", s.l2_log_blk_count},
      {"l2_rebuild_success", s.l2_rebuild_success},
      {"l2_rebuild_io_errors", s.l2_rebuild_io_errors},
      {"l2_rebuild_dh_errors", s.l2_rebuild_dh_errors},
      {"l2_rebuild_cksum_lb_errors", s.l2_rebuild_cksum_lb_errors},
      {"l2_rebuild_size", s.l2_rebuild_size},
      {"l2_rebuild_asize", s.l2_rebuild_asize},
      {"l2_rebuild_bufs", s.l2_rebuild_bufs},
      {"l2_rebuild_log_blks", s.l2_rebuild_log_blks},
      {"memory_throttle_count", s.memory_throttle_count},
      {"arc_no_grow", s.arc_no_grow},
      {"arc_meta_used", s.arc_meta_used},
      {"arc_meta_limit", s.arc_meta_limit},
      {"demand_hit_predictive_prefetch", s.demand_hit_predictive_prefetch},
      {"uncached_total", s.uncached},
  };
  const uint64_t now = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                 std::chrono::steady_clock::now().time_since_epoch())
                                                 .count());
  std::string out;
  char line[128];
  // kstat header: kid, type (1 = named), flags, ndata, data size, crtime, snaptime.
  std::snprintf(line, sizeof line, "13 1 0x01 %zu %zu %" PRIu64 " %" PRIu64 "\n", std::size(rows),
                std::size(rows) * 40, now, now);
  out += line;
  out += "name                            type data\n";
  for (const auto& [name, v] : rows) {
    std::snprintf(line, sizeof line, "%-32s%-5d%" PRIu64 "\n", name, 4, v);
    out += line;
  }
  return out;
}

}  // namespace uzfs
