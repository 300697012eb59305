// DSL directory and dataset records (dsl_phys.h): explicit little-endian
// field-by-field codecs, no struct memcpy.
#include "zfs/dsl_format/dsl_phys.h"

#include <algorithm>
#include <cstdio>

#include "zfs/util/endian.h"

namespace uzfs {
namespace {

uint64_t At(std::span<const uint8_t> b, size_t off) {
  return off + 8 <= b.size() ? LoadLE64(b.data() + off) : 0;
}

}  // namespace

Result<DslDirPhys> DecodeDslDir(std::span<const uint8_t> b) {
  if (b.size() < kDslDirMinSize) return Status::Corruption("DSL directory bonus too short");
  DslDirPhys d;
  d.creation_time = At(b, 0);
  d.head_dataset_obj = At(b, 8);
  d.parent_obj = At(b, 16);
  d.origin_obj = At(b, 24);
  d.child_dir_zapobj = At(b, 32);
  d.used_bytes = At(b, 40);
  d.compressed_bytes = At(b, 48);
  d.uncompressed_bytes = At(b, 56);
  d.quota = At(b, 64);
  d.reserved = At(b, 72);
  d.props_zapobj = At(b, 80);
  d.deleg_zapobj = At(b, 88);
  d.flags = At(b, 96);
  for (int i = 0; i < kDdUsedCount; i++) d.used_breakdown[i] = At(b, 104 + 8 * i);
  if (b.size() >= 152) d.clones = At(b, 144);
  return d;
}

Result<DslDatasetPhys> DecodeDslDataset(std::span<const uint8_t> b) {
  if (b.size() < kDslDatasetMinSize) return Status::Corruption("DSL dataset bonus too short");
  DslDatasetPhys d;
  d.dir_obj = At(b, 0);
  d.prev_snap_obj = At(b, 8);
  d.prev_snap_txg = At(b, 16);
  d.next_snap_obj = At(b, 24);
  d.snapnames_zapobj = At(b, 32);
  d.num_children = At(b, 40);
  d.creation_time = At(b, 48);
  d.creation_txg = At(b, 56);
  d.deadlist_obj = At(b, 64);
  d.referenced_bytes = At(b, 72);
  d.compressed_bytes = At(b, 80);
  d.uncompressed_bytes = At(b, 88);
  d.unique_bytes = At(b, 96);
  d.fsid_guid = At(b, 104);
  d.guid = At(b, 112);
  d.flags = At(b, 120);
  d.bp = DecodeBlockPtr(std::span<const uint8_t, kBlockPtrSize>(b.data() + 128, kBlockPtrSize));
  d.next_clones_obj = At(b, 256);
  d.props_obj = At(b, 264);
  d.userrefs_obj = At(b, 272);
  return d;
}

void EncodeDslDir(const DslDirPhys& d, std::span<uint8_t, kDslDirPhysSize> out) {
  std::fill(out.begin(), out.end(), 0);
  const uint64_t v[] = {d.creation_time, d.head_dataset_obj, d.parent_obj, d.origin_obj,
                        d.child_dir_zapobj, d.used_bytes, d.compressed_bytes,
                        d.uncompressed_bytes, d.quota, d.reserved, d.props_zapobj,
                        d.deleg_zapobj, d.flags};
  for (size_t i = 0; i < std::size(v); i++) StoreLE64(out.data() + 8 * i, v[i]);
  for (int i = 0; i < kDdUsedCount; i++) StoreLE64(out.data() + 104 + 8 * i, d.used_breakdown[i]);
  StoreLE64(out.data() + 144, d.clones);
}

void EncodeDslDataset(const DslDatasetPhys& d, std::span<uint8_t, kDslDatasetPhysSize> out) {
  std::fill(out.begin(), out.end(), 0);
  const uint64_t v[] = {d.dir_obj, d.prev_snap_obj, d.prev_snap_txg, d.next_snap_obj,
                        d.snapnames_zapobj, d.num_children, d.creation_time, d.creation_txg,
                        d.deadlist_obj, d.referenced_bytes, d.compressed_bytes,
                        d.uncompressed_bytes, d.unique_bytes, d.fsid_guid, d.guid, d.flags};
  for (size_t i = 0; i < std::size(v); i++) StoreLE64(out.data() + 8 * i, v[i]);
  EncodeBlockPtr(d.bp, std::span<uint8_t, kBlockPtrSize>(out.data() + 128, kBlockPtrSize));
  StoreLE64(out.data() + 256, d.next_clones_obj);
  StoreLE64(out.data() + 264, d.props_obj);
  StoreLE64(out.data() + 272, d.userrefs_obj);
}

std::string NextClonesEntryName(uint64_t ds_obj) {
  char b[24];
  std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(ds_obj));
  return b;
}

}  // namespace uzfs
