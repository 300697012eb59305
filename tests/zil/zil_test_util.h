// Shared by the intent-log tests: records printed the way zfs-fuse's
// `zdb -ivvv` prints them, the listing part of that output, and the
// unpacking of the pool images under tests/fixtures/zil/.
#pragma once

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testutil/testutil.h"
#include "zfs/zil/zil_format.h"

namespace uzfs::ziltest {

// Unpacks the image tests/fixtures/zil/<name>.img.gz to the file `to`
// (a fatal failure when gzip cannot).
inline void UnpackZilFixture(const std::string& name, const std::filesystem::path& to) {
  const std::string cmd =
      "gzip -dc '" + test::FixturePath("zil/" + name + ".img.gz").string() + "' > '" + to.string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

inline std::string Fmt(const char* f, auto... a) {
  char buf[512];
  std::snprintf(buf, sizeof buf, f, a...);
  return buf;
}

// One record as zfs-fuse's zdb -ivvv prints it (lines without their tabs).
inline std::vector<std::string> ZdbLines(const LogRecord& rec) {
  std::vector<std::string> out;
  std::string name = TxTypeName(rec.txtype);
  if (rec.type() == TxType::kAcl) name = "TX_ACL_ACL";
  out.push_back(Fmt("%-20slen %6zu, txg %" PRIu64 ", seq %" PRIu64, name.c_str(),
                    EncodedRecordSize(rec), rec.txg, rec.seq));
  if (const auto* c = std::get_if<LrCreate>(&rec.body)) {
    out.push_back(rec.type() == TxType::kSymlink ? c->name + " -> " + c->target : c->name);
    const time_t t = static_cast<time_t>(c->crtime[0]);
    struct tm tm;
    gmtime_r(&t, &tm);
    char date[64];
    strftime(date, sizeof date, "%a %b %e %H:%M:%S %Y", &tm);
    out.push_back(date);
    out.push_back(Fmt("doid %" PRIu64 ", foid %" PRIu64 ", mode %" PRIo64, c->doid, c->foid, c->mode));
    out.push_back(Fmt("uid %" PRIu64 ", gid %" PRIu64 ", gen %" PRIu64 ", rdev 0x%" PRIx64, c->uid,
                      c->gid, c->gen, c->rdev));
  } else if (const auto* r = std::get_if<LrRemove>(&rec.body)) {
    out.push_back(Fmt("doid %" PRIu64 ", name %s", r->doid, r->name.c_str()));
  } else if (const auto* l = std::get_if<LrLink>(&rec.body)) {
    out.push_back(Fmt("doid %" PRIu64 ", link_obj %" PRIu64 ", name %s", l->doid, l->link_obj,
                      l->name.c_str()));
  } else if (const auto* n = std::get_if<LrRename>(&rec.body)) {
    out.push_back(Fmt("sdoid %" PRIu64 ", tdoid %" PRIu64, n->sdoid, n->tdoid));
    out.push_back(Fmt("src %s tgt %s", n->src.c_str(), n->tgt.c_str()));
  } else if (const auto* w = std::get_if<LrWrite>(&rec.body)) {
    out.push_back(Fmt("foid %" PRIu64 ", offset %" PRIx64 ", length %" PRIx64, w->foid, w->offset,
                      w->length));
  } else if (const auto* tr = std::get_if<LrTruncate>(&rec.body)) {
    out.push_back(Fmt("foid %" PRIu64 ", offset 0x%" PRIx64 ", length 0x%" PRIx64, tr->foid,
                      tr->offset, tr->length));
  } else if (const auto* s = std::get_if<LrSetattr>(&rec.body)) {
    out.push_back(Fmt("foid %" PRIu64 ", mask 0x%" PRIx64, s->foid, s->mask));
    if (s->mask & kAtMode) out.push_back(Fmt("AT_MODE  %" PRIo64, s->mode));
  }
  return out;
}

// The listing part of zdb -ivvv: block and record lines up to the totals,
// tabs dropped, ", will claim"/", won't claim" dropped.
inline std::vector<std::string> ZdbListing(const std::string& text, uint64_t* last_block) {
  std::istringstream in(text);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("\t\t", 0) != 0 && line.rfind("\tBlock", 0) != 0) continue;
    const size_t t = line.find_first_not_of('\t');
    std::string s = line.substr(t);
    if (s.rfind("Total", 0) == 0) break;
    if (s.rfind("Block seqno ", 0) == 0) {
      s = s.substr(0, s.find(','));
      *last_block = std::stoull(s.substr(12));
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace uzfs::ziltest
