// ZPL 5 (system attributes) judged by OpenZFS 2.1's zdb:
//  - a version-5000 pool whose datasets get InitNewFilesystem (ZPL 5): zdb
//    -dddd shows the root directory's SA (uid, gid, times, gen, mode, size,
//    parent, links, pflags) with the values uzfs wrote, the SA master node,
//    the registry (22 attributes, "[len:bswap:num]") and layout 2;
//  - files written with SaCodec into that dataset (a regular file with
//    data, a symlink, a character device; objects allocated here and named
//    in the root directory as (DT << 60) | obj) print their attributes,
//    symlink target and rdev right, and the new layouts (symlink,
//    device) appear in the LAYOUTS ZAP;
//  - zdb -bcc finds every block and no leak.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/dsl/pool_test_util.h"
#include "tests/testutil/testutil.h"
#include "zfs/dsl/pool.h"
#include "zfs/zap/dmu_zap_object.h"
#include "zfs/zap/zap_writer.h"
#include "zfs/zpl/sa_codec.h"
#include "zfs/zpl/zpl_create.h"

namespace uzfs {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kDtChr = 2, kDtReg = 8, kDtLnk = 10;
constexpr uint64_t kRdev = 0x0000000400000041ull;

struct Made {
  uint64_t file = 0, link = 0, dev = 0;
  uint64_t file_gen = 0;
};

ZnodeAttrs NewFile(uint64_t mode, uint64_t gen, uint64_t t) {
  ZnodeAttrs a;
  a.mode = mode;
  a.gen = gen;
  a.parent = kZpl5RootObj;
  a.links = 1;
  a.flags = TrivialAclFlags(mode & 07777);
  a.uid = 1234;
  a.gid = 567;
  a.atime = a.mtime = a.ctime = a.crtime = {t, 0};
  a.acl = TrivialAcl(mode & 07777);
  return a;
}

// One file: a new object whose bonus is a's SA, named `name` in the root.
Result<uint64_t> AddFile(ObjsetWriter& os, const SaCodec& codec, const std::string& name, uint64_t dt,
                         const ZnodeAttrs& a, std::span<const uint8_t> data, uint64_t txg) {
  ObjectProps p;
  p.type = dmu_ot::kPlainFileContents;
  p.bonustype = dmu_ot::kSa;
  p.bonuslen = kSaBonusRoom512;
  p.block_size = data.empty() ? 512 : (data.size() + 511) / 512 * 512;
  p.indblkshift = 17;
  UZFS_ASSIGN_OR_RETURN(uint64_t obj, os.AllocateObject(p, Txg{txg}));
  if (!data.empty()) UZFS_RETURN_IF_ERROR(os.Write(obj, 0, data, Txg{txg}));
  UZFS_ASSIGN_OR_RETURN(EncodedZnode enc, codec.EncodeIn(os, a, kSaBonusRoom512, Txg{txg}));
  if (!enc.spill.empty()) return Status::NotSupported("spill");
  UZFS_RETURN_IF_ERROR(os.SetBonus(obj, enc.bonustype, enc.bonus, Txg{txg}));
  DmuZapObject dir(os, kZpl5RootObj, Txg{txg});
  UZFS_ASSIGN_OR_RETURN(ZapWriter zap, ZapWriter::Open(dir));
  UZFS_RETURN_IF_ERROR(zap.Add(name, dt << 60 | obj));
  UZFS_RETURN_IF_ERROR(dir.Flush());
  return obj;
}

Status BuildPool(const fs::path& dir, Made* made) {
  PoolCreateOptions o;
  o.version = 5000;
  o.ashift = 9;
  o.fs_init = InitNewFilesystem;
  o.history = "zpool create sp";
  PoolLayout l;
  l.data = {pooltest::Leaf(dir, "d0")};
  UZFS_ASSIGN_OR_RETURN(auto p, Pool::Create("sp", l, o));
  Pool& P = *p;
  UZFS_RETURN_IF_ERROR(P.CreateDataset("sp/fs", {}));
  UZFS_RETURN_IF_ERROR(P.Sync());
  {
    UZFS_ASSIGN_OR_RETURN(ObjsetWriter * os, P.Objset("sp/fs"));
    UZFS_ASSIGN_OR_RETURN(std::unique_ptr<SaCodec> codec, LoadSaCodec(*os));
    UZFS_ASSIGN_OR_RETURN(auto tx, P.Begin(100000));
    const uint64_t txg = tx.txg().number();
    const std::vector<uint8_t> data = test::RandomBytes(5000, 3);
    ZnodeAttrs f = NewFile(0100644, txg, 1700000100);
    f.size = data.size();
    UZFS_ASSIGN_OR_RETURN(made->file, AddFile(*os, *codec, "file", kDtReg, f, data, txg));
    made->file_gen = txg;
    ZnodeAttrs s = NewFile(0120777, txg, 1700000200);
    s.symlink = "target/of/the/link";
    s.size = s.symlink->size();
    UZFS_ASSIGN_OR_RETURN(made->link, AddFile(*os, *codec, "link", kDtLnk, s, {}, txg));
    ZnodeAttrs d = NewFile(0020640, txg, 1700000300);
    d.rdev = kRdev;
    UZFS_ASSIGN_OR_RETURN(made->dev, AddFile(*os, *codec, "dev", kDtChr, d, {}, txg));
    // The root directory now has three entries: size 5, a new mtime/ctime.
    UZFS_ASSIGN_OR_RETURN(Dnode rdn, os->GetDnode(kZpl5RootObj));
    UZFS_ASSIGN_OR_RETURN(ZnodeAttrs r, codec->Decode(rdn.bonustype, rdn.bonus, {}, false));
    r.size = 5;
    r.mtime = r.ctime = {1700000400, 0};
    UZFS_ASSIGN_OR_RETURN(EncodedZnode enc, codec->EncodeIn(*os, r, kSaBonusRoom512, Txg{txg}));
    UZFS_RETURN_IF_ERROR(os->SetBonus(kZpl5RootObj, enc.bonustype, enc.bonus, Txg{txg}));
    tx.Commit();
  }
  UZFS_RETURN_IF_ERROR(P.Sync());
  return P.Export();
}

std::string Zdb(const fs::path& dir, const std::string& args) {
  std::string out;
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + dir.string() + " " + args, &out), 0) << out;
  return out;
}

// The lines of `out` from "Object" header of `obj` up to the next object.
std::string ObjectBlock(const std::string& out, uint64_t obj) {
  const std::string row = "\n" + std::string(10 - std::to_string(obj).size(), ' ') + std::to_string(obj) + " ";
  size_t at = out.find(row);
  if (at == std::string::npos) return "";
  size_t end = out.find("\n    Object ", at);
  return out.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

void ExpectHas(const std::string& text, const std::string& what) {
  EXPECT_NE(text.find(what), std::string::npos) << "missing '" << what << "' in\n" << text;
}

TEST(Zpl5OpenZfsZdb, SaFileSystemAndCodecFiles) {
  test::TempDir d;
  Made m;
  ASSERT_UZFS_OK(BuildPool(d.path(), &m));

  // The root dataset's file system (zpool create) and sp/fs: ZPL 5 objects.
  const std::string all = Zdb(d.path(), "-dddd sp/fs");
  for (const char* type : {"ZFS master node", "SA master node", "ZFS delete queue", "ZFS directory",
                           "SA attr registration", "SA attr layouts", "ZFS plain file"}) {
    ExpectHas(all, type);
  }
  const std::string master = ObjectBlock(all, 1);
  for (const char* e : {"VERSION = 5", "SA_ATTRS = 2", "DELETE_QUEUE = 3", "ROOT = 4", "SHARES = 7"})
    ExpectHas(master, e);
  const std::string sam = ObjectBlock(all, 2);
  ExpectHas(sam, "REGISTRY = 5");
  ExpectHas(sam, "LAYOUTS = 6");
  const std::string reg = ObjectBlock(all, 5);
  for (const char* e : {"ZPL_ATIME =  10000000 : [16:0:0]", "ZPL_MODE =  8000005 : [8:0:5]",
                        "ZPL_ZNODE_ACL =  5803000f : [88:3:15]", "ZPL_DACL_COUNT =  8000010 : [8:0:16]",
                        "ZPL_SYMLINK =  30011 : [0:3:17]", "ZPL_DACL_ACES =  40013 : [0:4:19]",
                        "ZPL_DXATTR =  30014 : [0:3:20]", "ZPL_PROJID =  8000015 : [8:0:21]"})
    ExpectHas(reg, e);
  const std::string lay = ObjectBlock(all, 6);
  ExpectHas(lay, "2 = [ 5  6  4  12  13  7  11  0  1  2  3  8  16  19 ]");
  ExpectHas(lay, "3 = [ 5  6  4  12  13  7  11  0  1  2  3  8  16  19  17 ]");
  ExpectHas(lay, "4 = [ 5  6  4  12  13  7  11  0  1  2  3  8  10  16  19 ]");

  const std::string root = ObjectBlock(all, kZpl5RootObj);
  for (const char* e : {"192   bonus  System attributes", "uid     0\n", "gid     0\n", "mode\t40755\n",
                        "size\t5\n", "parent\t4\n", "links\t2\n", "pflags\t40800000144\n", "gen\t"})
    ExpectHas(root, e);
  ExpectHas(root, "file = " + std::to_string(m.file) + " (type: Regular File)");
  ExpectHas(root, "link = " + std::to_string(m.link) + " (type: Symbolic Link)");
  ExpectHas(root, "dev = " + std::to_string(m.dev) + " (type: Character Device)");
  const std::string shares = ObjectBlock(all, kZpl5SharesObj);
  ExpectHas(shares, "mode\t40555\n");
  ExpectHas(shares, "parent\t7\n");

  const std::string file = ObjectBlock(all, m.file);
  for (const std::string& e : {std::string("bonus  System attributes"), std::string("uid     1234\n"), std::string("gid     567\n"),
                              std::string("mode\t100644\n"), std::string("size\t5000\n"), std::string("parent\t4\n"),
                              std::string("links\t1\n"), "gen\t" + std::to_string(m.file_gen) + "\n"})
    ExpectHas(file, e);
  const std::string link = ObjectBlock(all, m.link);
  ExpectHas(link, "target\ttarget/of/the/link\n");
  ExpectHas(link, "mode\t120777\n");
  ExpectHas(link, "size\t18\n");
  const std::string dev = ObjectBlock(all, m.dev);
  ExpectHas(dev, "mode\t20640\n");
  ExpectHas(dev, "rdev\t0x0000000400000041\n");

  // Every block found, checksums good, nothing leaked.
  std::string out;
  EXPECT_EQ(test::RunOpenZfsZdb("-U /dev/null -e -p " + d.path().string() + " -bcc sp", &out), 0) << out;
  ExpectHas(out, "No leaks (block sum matches space maps exactly)");
  for (const char* bad : {"error", "leaked space", "(leaked", "unreachable", "!= alloc", "ASSERT", "panic"})
    EXPECT_EQ(out.find(bad), std::string::npos) << bad << " in\n" << out;
}

}  // namespace
}  // namespace uzfs
