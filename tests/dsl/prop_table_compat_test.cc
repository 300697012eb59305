// The inheritance walk of zfs/dsl/prop_table against zfs-fuse: a pool with
// properties set, overridden and inherited at four levels (and `zfs
// inherit` undoing some), exported; then for every dataset the DSL props
// ZAPs read back from the image (PoolReader) and the ZPL master node must
// give the same value and source per property as
// `zfs get -Hp -o name,property,value,source all`, and the pool props ZAP
// the same as `zpool get all`. Runs zfs-fuse: needs root.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "tests/testutil/testutil.h"
#include "zfs/dsl/prop_table.h"
#include "zfs/inspect/pool_reader.h"

namespace uzfs {
namespace {

PropZap ToPropZap(const std::vector<ZapEntry>& list) {
  PropZap out;
  for (const ZapEntry& e : list) {
    if (e.int_size == 1) {
      std::string s;
      for (uint64_t b : e.values) s.push_back(static_cast<char>(b));
      while (!s.empty() && s.back() == '\0') s.pop_back();
      out.push_back({e.name, PropValue::String(s)});
    } else {
      out.push_back({e.name, PropValue::Number(e.value())});
    }
  }
  return out;
}

std::vector<std::vector<std::string>> Tsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::istringstream ls(line);
    std::string x;
    while (std::getline(ls, x, '\t')) f.push_back(x);
    if (!f.empty()) rows.push_back(f);
  }
  return rows;
}

TEST(PropTableCompatTest, InheritanceMatchesZfsGet) {
  test::TempDir tmp;
  const std::string d = tmp.path().string();
  const std::string script =
      "set -e\ncd " + d + "\n" +
      "truncate -s 64M cp.img\n"
      "zpool create -o version=23 -m " + d + "/mnt cp " + d + "/cp.img\n"
      "zfs create cp/a; zfs create cp/a/b; zfs create cp/a/b/c; zfs create cp/x\n"
      "zfs create -o normalization=formD -o utf8only=on -o casesensitivity=mixed cp/n\n"
      "zfs set compression=gzip-9 cp; zfs set recordsize=16k cp; zfs set checksum=sha256 cp\n"
      "zfs set logbias=throughput cp; zfs set com.uzfs:top=root cp; zfs set com.uzfs:only=r cp\n"
      "zfs set compression=lzjb cp/a; zfs set atime=off cp/a; zfs set quota=20M cp/a\n"
      "zfs set canmount=noauto cp/a; zfs set secondarycache=metadata cp/a\n"
      "zfs set copies=2 cp/a/b; zfs set dedup=verify cp/a/b; zfs set com.uzfs:top=mid cp/a/b\n"
      "zfs set snapdir=visible cp/a/b; zfs set reservation=1M cp/a/b\n"
      "zfs set aclinherit=passthrough cp/a/b; zfs set mountpoint=" + d + "/elsewhere cp/a/b\n"
      "zfs set refquota=10M cp/a/b/c; zfs set xattr=off cp/a/b/c; zfs set recordsize=4k cp/a/b/c\n"
      "zfs set compression=zle cp/a/b/c; zfs inherit compression cp/a/b/c\n"
      "zfs set atime=on cp/a/b/c; zfs inherit atime cp/a/b/c\n"
      "zfs set com.uzfs:top=leaf cp/a/b/c; zfs inherit com.uzfs:top cp/a/b/c\n"
      "zfs set mountpoint=legacy cp/x; zfs set readonly=on cp/x; zfs set aclmode=discard cp/x\n"
      "zfs set sharenfs=ro cp/x; zfs set checksum=fletcher4 cp/x; zfs set com.uzfs:x=1 cp/x\n"
      "zpool set failmode=continue cp; zpool set autoreplace=on cp\n"
      "zpool set listsnapshots=on cp; zpool set bootfs=cp/a cp; zpool set dedupditto=200 cp\n"
      "zfs get -Hp -o name,property,value,source all cp cp/a cp/a/b cp/a/b/c cp/x cp/n"
      " > theirs.tsv\n"
      "zpool get all cp > pool.txt\n"
      "zpool export cp\n";
  std::string out;
  ASSERT_EQ(test::RunInZfsFuseSandbox(script, &out), 0) << out;
  const auto rows = Tsv(test::ReadText(d + "/theirs.tsv"));
  ASSERT_GT(rows.size(), 200u) << out;

  auto pool = PoolReader::Open(d, "cp");
  ASSERT_UZFS_OK(pool.status());
  PoolReader& pr = **pool;

  // Each dataset's chain (itself up to the pool) and ZPL master node.
  std::map<std::string, std::vector<DslPropLevel>> chains;
  std::map<std::string, PropZap> zpl;
  std::map<uint64_t, std::string> ds_names;
  for (const char* name : {"cp", "cp/a", "cp/a/b", "cp/a/b/c", "cp/x", "cp/n"}) {
    std::vector<DslPropLevel> chain;
    for (std::string n = name;;) {
      auto ref = pr.ResolveDataset(n);
      ASSERT_TRUE(ref.ok()) << n << ": " << ref.status().ToString();
      if (n == name) ds_names[ref->ds_obj] = n;
      auto zap = pr.MosZap(ref->dir.props_zapobj);
      ASSERT_TRUE(zap.ok()) << n << ": " << zap.status().ToString();
      auto list = zap->List();
      ASSERT_UZFS_OK(list.status());
      chain.push_back({n, ToPropZap(*list)});
      const size_t slash = n.rfind('/');
      if (slash == std::string::npos) break;
      n.resize(slash);
    }
    chains[name] = std::move(chain);
    auto ref = pr.ResolveDataset(name);
    ASSERT_UZFS_OK(ref.status());
    auto os = pr.OpenObjset(*ref);
    ASSERT_UZFS_OK(os.status());
    auto master = pr.reader().ReadDnode(os->meta_dnode, 1);
    ASSERT_UZFS_OK(master.status());
    auto mz = OpenObjectZap(pr.reader(), *master);
    ASSERT_UZFS_OK(mz.status());
    auto ml = mz->List();
    ASSERT_UZFS_OK(ml.status());
    zpl[name] = ToPropZap(*ml);
  }

  int compared = 0, readonly = 0;
  for (const auto& f : rows) {
    ASSERT_EQ(f.size(), 4u);
    const std::string& ds = f[0];
    const std::string& prop = f[1];
    SCOPED_TRACE(ds + " " + prop);
    const PropDef* def = FindDatasetProp(prop);
    if (def != nullptr && def->storage == PropStorage::kComputed) {
      EXPECT_EQ(f[3], "-");
      readonly++;
      continue;
    }
    auto r = ResolveDatasetProp(prop, chains.at(ds), &zpl.at(ds));
    ASSERT_UZFS_OK(r.status());
    EXPECT_EQ(FormatDatasetProp(r->name, r->value, true), f[2]);
    EXPECT_EQ(r->SourceText(), f[3]);
    compared++;
  }
  EXPECT_GE(compared, 6 * 32);
  EXPECT_GE(readonly, 6 * 12);

  // The whole listing: same properties in the same order, user ones too.
  std::vector<std::string> user_columns;  // one list for the whole command
  for (const char* dsname : {"cp", "cp/a", "cp/a/b", "cp/a/b/c", "cp/x", "cp/n"}) {
    const std::string ds = dsname;
    const auto& chain = chains.at(ds);
    SCOPED_TRACE(ds);
    const PropZap computed = {
        {"type", PropValue::String("filesystem")}, {"creation", PropValue::Number(0)},
        {"used", PropValue::Number(0)},            {"available", PropValue::Number(0)},
        {"referenced", PropValue::Number(0)},      {"compressratio", PropValue::Number(100)},
        {"mounted", PropValue::Number(0)},         {"usedbysnapshots", PropValue::Number(0)},
        {"usedbydataset", PropValue::Number(0)},   {"usedbychildren", PropValue::Number(0)},
        {"usedbyrefreservation", PropValue::Number(0)}, {"mlslabel", PropValue::String("-")}};
    auto all = ResolveAllDatasetProps(chain, &zpl.at(ds), &computed, kPropFilesystem, &user_columns);
    ASSERT_UZFS_OK(all.status());
    std::vector<std::string> ours, theirs;
    for (const ResolvedProp& r : *all) ours.push_back(r.name);
    for (const auto& f : rows) {
      if (f[0] == ds) theirs.push_back(f[1]);
    }
    auto tail = [](const std::vector<std::string>& v) {
      std::string s;
      for (size_t i = v.size() > 4 ? v.size() - 4 : 0; i < v.size(); i++) s += v[i] + " ";
      return s;
    };
    EXPECT_EQ(ours, theirs) << "ours: " << tail(ours) << "\ntheirs: " << tail(theirs);
  }

  // Pool properties from the MOS pool props ZAP.
  auto pp_obj = pr.DirectoryEntry("pool_props");
  ASSERT_UZFS_OK(pp_obj.status());
  auto ppz = pr.MosZap(*pp_obj);
  ASSERT_UZFS_OK(ppz.status());
  auto ppl = ppz->List();
  ASSERT_UZFS_OK(ppl.status());
  const PropZap pool_zap = ToPropZap(*ppl);
  PoolPropState st;
  st.version = pr.uberblock().version;
  st.guid = pr.guid();
  if (const PropValue* b = FindInZap(pool_zap, "bootfs")) st.bootfs_name = ds_names[b->number];
  std::istringstream pin(test::ReadText(d + "/pool.txt"));
  std::string line;
  std::getline(pin, line);  // header
  int pool_rows = 0;
  while (std::getline(pin, line)) {
    std::istringstream ls(line);
    std::string name, prop, value, source, more;
    ls >> name >> prop >> value >> source;
    while (ls >> more) source += " " + more;
    SCOPED_TRACE(prop);
    auto r = ResolvePoolProp(prop, pool_zap, st);
    ASSERT_UZFS_OK(r.status());
    EXPECT_EQ(r->SourceText(), source);
    if (prop != "size" && prop != "free" && prop != "allocated" && prop != "capacity" &&
        prop != "health" && prop != "dedupratio") {
      EXPECT_EQ(FormatPoolProp(prop, r->value, false), value);
    }
    pool_rows++;
  }
  EXPECT_EQ(pool_rows, 18);
}

}  // namespace
}  // namespace uzfs
