// The replication stream header (zfs/send_format/replication_header.h):
// zfs-fuse's, read from a real stream; ours, written and read back; and
// damaged ones refused.
#include "zfs/send_format/replication_header.h"

#include <gtest/gtest.h>

#include "tests/send_format/stream_test_util.h"
#include "zfs/util/nvlist/nvlist.h"

namespace uzfs::send {
namespace {

TEST(ReplicationHeader, ReadsZfsFuseHeader) {
  const std::vector<uint8_t> bytes = Fixture();
  const ReadAll all = Read(bytes);
  ASSERT_UZFS_OK(all.status);
  ASSERT_FALSE(all.records.empty());
  const auto& head = std::get<BeginRecord>(all.records[0].body);
  ASSERT_EQ(head.header_type, HeaderType::kCompound);
  auto h = ReplicationHeader::Decode(all.payloads[0]);
  ASSERT_UZFS_OK(h.status());
  EXPECT_EQ(h->from_snap, "");
  EXPECT_EQ(h->to_snap, "two");
  EXPECT_TRUE(h->recursive);
  ASSERT_EQ(h->filesystems.size(), 1u);
  const ReplicatedFs& fs = h->filesystems[0];
  EXPECT_EQ(fs.name, "st/fs");
  EXPECT_NE(fs.guid, 0u);
  EXPECT_EQ(fs.parent_from_snap, 0u);
  ASSERT_EQ(fs.snaps.size(), 2u);
  // Every substream's snapshot is in the header, by guid.
  size_t substreams = 0;
  for (size_t i = 1; i < all.records.size(); ++i) {
    if (all.records[i].type() != RecordType::kBegin) continue;
    const auto& b = std::get<BeginRecord>(all.records[i].body);
    EXPECT_EQ(h->ForSnapshot(b.to_guid), &fs) << b.to_name;
    EXPECT_EQ("st/fs@" + fs.SnapshotNamed(b.to_guid), b.to_name);
    ++substreams;
  }
  EXPECT_EQ(substreams, 2u);
}

ReplicationHeader Sample() {
  ReplicationHeader h;
  h.from_snap = "a";
  h.to_snap = "b";
  ReplicatedFs top;
  top.guid = 0x7cb145ed8d449bfULL;
  top.name = "tank/fs";
  top.props = {{"atime", uint64_t{0}}, {"com.example:note", std::string("hello")}};
  top.snaps = {{"a", 11}, {"b", 12}};
  top.snap_props["a"] = {{"com.example:snap", std::string("x")}};
  ReplicatedFs child;
  child.guid = 0xfedcba9876543210ULL;
  child.name = "tank/fs/clone";
  child.parent_from_snap = 11;
  child.origin = 11;
  child.snaps = {{"b", 22}};
  h.filesystems = {top, child};
  return h;
}

TEST(ReplicationHeader, RoundTrips) {
  const ReplicationHeader h = Sample();
  auto packed = h.Encode();
  ASSERT_UZFS_OK(packed.status());
  auto back = ReplicationHeader::Decode(*packed);
  ASSERT_UZFS_OK(back.status());
  EXPECT_EQ(*back, h);
  EXPECT_EQ(back->ForSnapshot(22), &back->filesystems[1]);
  EXPECT_EQ(back->ForSnapshot(33), nullptr);

  // The same list in the native encoding reads the same.
  auto xdr_list = NvList::DecodeXdr(*packed);
  ASSERT_UZFS_OK(xdr_list.status());
  auto native = xdr_list->EncodeNative();
  ASSERT_UZFS_OK(native.status());
  auto from_native = ReplicationHeader::Decode(*native);
  ASSERT_UZFS_OK(from_native.status());
  EXPECT_EQ(*from_native, h);

  ReplicationHeader p = Sample();
  p.recursive = false;
  p.from_snap.clear();
  p.filesystems.resize(1);
  auto pp = p.Encode();
  ASSERT_UZFS_OK(pp.status());
  auto nv = NvList::DecodeXdr(*pp);
  ASSERT_UZFS_OK(nv.status());
  // The names receivers look for.
  EXPECT_UZFS_OK(nv->GetBoolean("not_recursive"));
  EXPECT_FALSE(nv->Has("fromsnap"));
  auto fss = nv->GetNvList("fss");
  ASSERT_UZFS_OK(fss.status());
  auto one = (*fss)->GetNvList("0x7cb145ed8d449bf");
  ASSERT_UZFS_OK(one.status());
  EXPECT_EQ(*(*one)->GetString("name"), "tank/fs");
  auto back_p = ReplicationHeader::Decode(*pp);
  ASSERT_UZFS_OK(back_p.status());
  EXPECT_EQ(*back_p, p);
}

// A header nvlist edited one way, then decoded: a Corruption.
void ExpectRefused(const std::function<void(NvList*)>& edit, const std::string& says) {
  auto packed = Sample().Encode();
  ASSERT_UZFS_OK(packed.status());
  auto nv = NvList::DecodeXdr(*packed);
  ASSERT_UZFS_OK(nv.status());
  edit(&*nv);
  auto again = nv->EncodeXdr();
  ASSERT_UZFS_OK(again.status());
  auto h = ReplicationHeader::Decode(*again);
  ASSERT_FALSE(h.ok()) << says;
  EXPECT_EQ(h.status().code(), Code::kCorruption);
  EXPECT_NE(std::string(h.status().message()).find(says), std::string::npos) << h.status().message();
}

// The file system entry "0x7cb145ed8d449bf" of `nv`, edited.
void EditTop(NvList* nv, const std::function<void(NvList*)>& edit) {
  NvList fss = *nv->GetNvList("fss").value();
  NvList one = *fss.GetNvList("0x7cb145ed8d449bf").value();
  edit(&one);
  ASSERT_TRUE(fss.Remove("0x7cb145ed8d449bf").ok());
  ASSERT_TRUE(fss.AddNvList("0x7cb145ed8d449bf", one).ok());
  ASSERT_TRUE(nv->Remove("fss").ok());
  ASSERT_TRUE(nv->AddNvList("fss", fss).ok());
}

TEST(ReplicationHeader, RefusesDamagedHeaders) {
  ExpectRefused([](NvList* nv) { ASSERT_TRUE(nv->Remove("tosnap").ok()); }, "tosnap");
  ExpectRefused([](NvList* nv) { ASSERT_TRUE(nv->Remove("fss").ok()); }, "fss");
  ExpectRefused(
      [](NvList* nv) {
        ASSERT_TRUE(nv->Remove("tosnap").ok());
        ASSERT_TRUE(nv->AddUint64("tosnap", 3).ok());
      },
      "tosnap");
  ExpectRefused(
      [](NvList* nv) {
        NvList fss = *nv->GetNvList("fss").value();
        ASSERT_TRUE(fss.AddNvList("notaguid", NvList{}).ok());
        ASSERT_TRUE(nv->Remove("fss").ok());
        ASSERT_TRUE(nv->AddNvList("fss", fss).ok());
      },
      "not a guid");
  ExpectRefused([](NvList* nv) { EditTop(nv, [](NvList* one) { ASSERT_TRUE(one->Remove("name").ok()); }); },
                "name");
  ExpectRefused([](NvList* nv) { EditTop(nv, [](NvList* one) { ASSERT_TRUE(one->Remove("snaps").ok()); }); },
                "snapshot list");
  ExpectRefused(
      [](NvList* nv) {
        EditTop(nv, [](NvList* one) {
          NvList props;
          ASSERT_TRUE(props.AddBooleanValue("atime", true).ok());
          ASSERT_TRUE(one->Remove("props").ok());
          ASSERT_TRUE(one->AddNvList("props", props).ok());
        });
      },
      "not a number or a string");
  // Not an nvlist at all.
  const std::vector<uint8_t> junk(64, 0x5a);
  auto h = ReplicationHeader::Decode(junk);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), Code::kCorruption);
}

}  // namespace
}  // namespace uzfs::send
