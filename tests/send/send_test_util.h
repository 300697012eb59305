// Helpers of the send and receive tests: the stream SendObjset makes of an
// object set (a begin record, its records, an end record), read back
// whole. Header-only, in uzfs::send.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "tests/send_format/stream_test_util.h"
#include "zfs/send/objset_send.h"

namespace uzfs::send {

// The stream of the object set `root` names with `opts`; *status gets
// SendObjset's status. The begin record names "t/fs@s" and opts.to_guid
// (a from guid of 1 for an incremental).
inline ReadAll SendStream(BlockReader& reader, const BlockPtr& root, const ObjsetSendOptions& opts,
                          Status* status) {
  std::vector<uint8_t> bytes;
  StreamWriter out(AppendTo(&bytes), StreamStyle::kRecordChecksums);
  BeginRecord b;
  b.features = opts.features;
  b.objset_type = 2;
  b.to_guid = opts.to_guid;
  b.from_guid = opts.from_txg != 0 ? 1 : 0;
  b.to_name = "t/fs@s";
  EXPECT_UZFS_OK(out.Write(AsRecord(b)));
  *status = SendObjset(reader, root, opts, out);
  EXPECT_UZFS_OK(out.WriteEnd(opts.to_guid));
  ReadAll all = Read(bytes);
  EXPECT_UZFS_OK(all.status);
  return all;
}

}  // namespace uzfs::send
