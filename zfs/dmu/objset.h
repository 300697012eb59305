// objset_phys_t: the root block of an object set (the MOS, a filesystem,
// a zvol), which a block pointer (uberblock rootbp, a dataset's bp) names.
//
// Layout (offsets in bytes; integers in the block's byte order):
//      0  meta-dnode (512): the object whose blocks hold every dnode
//    512  zil_header (192): claim_txg:64 replay_seq:64 log blkptr (128)
//                           claim_blk_seq:64 flags:64 claim_lr_seq:64 pad[3]
//    704  type:64 (ObjsetType)  712 flags:64 (1 = user accounting complete)
//    720  pad to 1024                                    (1 KiB: pool v < 15)
//   1024  userused dnode (512)  1536 groupused dnode (512)  (2 KiB objsets)
//   2048  projectused dnode (512), pad to 4096             (4 KiB objsets)
//
// Objects 0..N of the set are the dnodes at N*512 in the meta-dnode's data.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "zfs/dmu/dnode.h"
#include "zfs/spa/block_ptr.h"
#include "zfs/util/status.h"

namespace uzfs {

inline constexpr size_t kObjsetPhysSizeV1 = 1024;
inline constexpr size_t kObjsetPhysSizeV2 = 2048;
inline constexpr size_t kObjsetPhysSizeV3 = 4096;
inline constexpr size_t kZilHeaderSize = 192;
inline constexpr uint64_t kObjsetFlagUserAccountingComplete = 1;

struct ZilHeader {
  uint64_t claim_txg = 0;
  uint64_t replay_seq = 0;
  BlockPtr log;                 // first log block (hole: empty log)
  uint64_t claim_blk_seq = 0;
  uint64_t flags = 0;
  uint64_t claim_lr_seq = 0;
};

struct Objset {
  Dnode meta_dnode;
  ZilHeader zil;
  uint64_t type = 0;            // ObjsetType
  uint64_t flags = 0;
  std::optional<Dnode> userused, groupused, projectused;  // by objset size
  bool byteswapped = false;
};

// Decodes an objset block of 1, 2 or 4 KiB (its bp's lsize). Corruption when
// the size is none of those, a dnode does not decode or validate, or the
// meta-dnode is not of type "DMU dnode".
Result<Objset> DecodeObjset(std::span<const uint8_t> raw, bool swap = false);

// Writes `os` little-endian into out, whose size (1, 2 or 4 KiB) says which
// optional dnodes are written (absent ones are written free). REQUIRES:
// every present dnode validates.
void EncodeObjset(const Objset& os, std::span<uint8_t> out);

}  // namespace uzfs
