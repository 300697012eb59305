// zfs bookmark SOURCE BOOKMARK and zfs destroy fs#name (man/zfs.8): a
// bookmark keeps what an incremental send needs of a snapshot (its guid
// and creation txg) after the snapshot is destroyed; SOURCE is a snapshot
// or a bookmark of the file system, BOOKMARK "fs#name" or "#name" (of
// SOURCE's file system). The pool side is zfs/dsl/pool_bookmarks.cc.
#include <string>

#include "cmd/uzfsd/zfs_datasets.h"
#include "cmd/uzfsd/zfs_handlers.h"

namespace uzfs::cmd {

int ZfsBookmark(CmdCtx& c) {
  ParsedArgs a = ParseArgs(c.args, "", "");
  if (!a.error.empty()) return ZfsUsage(c, "bookmark", a.error);
  if (a.operands.size() < 2) return ZfsUsage(c, "bookmark", "missing source or bookmark argument");
  if (a.operands.size() > 2) return ZfsUsage(c, "bookmark", "too many arguments");
  const std::string source = a.operands[0];
  std::string bookmark = a.operands[1];
  if (source.find_first_of("@#") == std::string::npos) {
    return c.Fail("cannot create bookmark '" + bookmark + "': source '" + source +
                  "' is neither a snapshot (fs@snap) nor a bookmark (fs#name)");
  }
  if (bookmark.starts_with("#")) bookmark = source.substr(0, source.find_first_of("@#")) + bookmark;
  if (bookmark.find('#') == std::string::npos) {
    return c.Fail("cannot create bookmark '" + bookmark + "': missing '#' delimiter in bookmark name");
  }
  auto e = PoolFor(c, source);
  if (e == nullptr) return c.Fail("cannot create bookmark '" + bookmark + "': dataset does not exist");
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot create bookmark '" + bookmark + "': dataset does not exist");
  if (Status s = e->pool->CreateBookmark(source, bookmark); !s.ok()) return c.Fail(std::string(s.message()));
  e->pool->LogHistory(c.cmdline);
  return 0;
}

int ZfsDestroyBookmark(CmdCtx& c, const ParsedArgs& a, const std::string& name) {
  if (a.Has('r') || a.Has('R') || a.Has('d')) {
    return ZfsUsage(c, "destroy", "-r, -R and -d do not apply to a bookmark");
  }
  auto e = PoolFor(c, name);
  if (e == nullptr) return c.Fail("cannot destroy '" + name + "': dataset does not exist");
  MutexLock l(&e->mu);
  if (e->pool == nullptr) return c.Fail("cannot destroy '" + name + "': dataset does not exist");
  if (a.Has('n')) {
    if (auto b = e->pool->FindBookmark(name); !b.ok()) return c.Fail(std::string(b.status().message()));
    if (a.Has('v')) c.out.Out("would destroy " + name + "\n");
    return 0;
  }
  if (Status s = e->pool->DestroyBookmarks({name}); !s.ok()) return c.Fail(std::string(s.message()));
  if (a.Has('v')) c.out.Out("will destroy " + name + "\n");
  e->pool->LogHistory(c.cmdline);
  return 0;
}

}  // namespace uzfs::cmd
