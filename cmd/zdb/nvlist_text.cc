// OpenZFS zdb's nvlist text and label statistics (nvlist_text.h).
#include "cmd/zdb/nvlist_text.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string_view>

namespace uzfs::zdb {
namespace {

std::string Pad(int indent) { return std::string(static_cast<size_t>(indent), ' '); }

// One element of an integer-like pair in decimal: signed types as signed,
// booleans as true/false.
std::string Word(NvType element, uint64_t w) {
  char buf[32];
  switch (element) {
    case NvType::kBooleanValue:
      return w ? "true" : "false";
    case NvType::kInt8:
    case NvType::kInt16:
    case NvType::kInt32:
    case NvType::kInt64:
      std::snprintf(buf, sizeof buf, "%" PRId64, static_cast<int64_t>(w));
      return buf;
    default:
      std::snprintf(buf, sizeof buf, "%" PRIu64, w);
      return buf;
  }
}

// The element type of an array type (the type itself for scalars).
NvType ElementType(NvType t) {
  switch (t) {
    case NvType::kBooleanArray: return NvType::kBooleanValue;
    case NvType::kByteArray: return NvType::kByte;
    case NvType::kInt8Array: return NvType::kInt8;
    case NvType::kUint8Array: return NvType::kUint8;
    case NvType::kInt16Array: return NvType::kInt16;
    case NvType::kUint16Array: return NvType::kUint16;
    case NvType::kInt32Array: return NvType::kInt32;
    case NvType::kUint32Array: return NvType::kUint32;
    case NvType::kInt64Array: return NvType::kInt64;
    case NvType::kUint64Array: return NvType::kUint64;
    default: return t;
  }
}

void AppendPair(const NvPair& p, int indent, std::string* out) {
  const std::string pad = Pad(indent);
  switch (p.type()) {
    case NvType::kBoolean:
      *out += pad + p.name() + "\n";
      return;
    case NvType::kBooleanValue:
    case NvType::kByte:
    case NvType::kInt8:
    case NvType::kUint8:
    case NvType::kInt16:
    case NvType::kUint16:
    case NvType::kInt32:
    case NvType::kUint32:
    case NvType::kInt64:
    case NvType::kUint64:
      *out += pad + p.name() + ": " + Word(p.type(), p.words().empty() ? 0 : p.words()[0]) + "\n";
      return;
    case NvType::kString:
      *out += pad + p.name() + ": '" + (p.strings().empty() ? "" : p.strings()[0]) + "'\n";
      return;
    case NvType::kBooleanArray:
    case NvType::kByteArray:
    case NvType::kInt8Array:
    case NvType::kUint8Array:
    case NvType::kInt16Array:
    case NvType::kUint16Array:
    case NvType::kInt32Array:
    case NvType::kUint32Array:
    case NvType::kInt64Array:
    case NvType::kUint64Array:
      for (size_t i = 0; i < p.words().size(); i++) {
        *out += pad + p.name() + "[" + std::to_string(i) + "]: " + Word(ElementType(p.type()), p.words()[i]) +
                "\n";
      }
      return;
    case NvType::kStringArray:
      for (size_t i = 0; i < p.strings().size(); i++) {
        *out += pad + p.name() + "[" + std::to_string(i) + "]: '" + p.strings()[i] + "'\n";
      }
      return;
    case NvType::kNvList:
      *out += pad + p.name() + ":\n";
      if (!p.lists().empty()) AppendNvListText(p.lists()[0], indent + 4, out);
      return;
    case NvType::kNvListArray:
      for (size_t i = 0; i < p.lists().size(); i++) {
        *out += pad + p.name() + "[" + std::to_string(i) + "]:\n";
        AppendNvListText(p.lists()[i], indent + 4, out);
      }
      return;
    default:
      // hrtime, double and unknown types: zdb has no format for them.
      *out += "bad config type " + std::to_string(static_cast<int32_t>(p.type())) + " for " + p.name() + "\n";
      return;
  }
}

// Every uint64, string and flag pair of a list and the lists below it,
// gathered into lists that allow repeated names, and how many lists were
// visited (the top one, nested ones, each element of a list array).
struct Gathered {
  NvList integers{0}, strings{0}, flags{0};
  int lists = 0;
  // The lists of every "children" array: the leaf vdevs of a label's
  // top-level vdev, and their encoded sizes.
  int leaves = 0;
  size_t leaf_bytes = 0, largest_leaf = 0;
};

Status Gather(const NvList& nv, Gathered* g) {
  g->lists++;
  for (const NvPair& p : nv) {
    switch (p.type()) {
      case NvType::kUint64:
        UZFS_RETURN_IF_ERROR(g->integers.AddUint64(p.name(), p.words()[0]));
        break;
      case NvType::kString:
        UZFS_RETURN_IF_ERROR(g->strings.AddString(p.name(), p.strings()[0]));
        break;
      case NvType::kBoolean:
        UZFS_RETURN_IF_ERROR(g->flags.AddBoolean(p.name()));
        break;
      case NvType::kNvList:
        UZFS_RETURN_IF_ERROR(Gather(p.lists()[0], g));
        break;
      case NvType::kNvListArray:
        for (const NvList& l : p.lists()) {
          UZFS_RETURN_IF_ERROR(Gather(l, g));
          if (p.name() != "children") continue;
          UZFS_ASSIGN_OR_RETURN(std::vector<uint8_t> enc, l.EncodeXdr());
          g->leaves++;
          g->leaf_bytes += enc.size();
          g->largest_leaf = std::max(g->largest_leaf, enc.size());
        }
        break;
      default:
        break;  // other types count toward the lists' share
    }
  }
  return Status::Ok();
}

}  // namespace

void AppendNvListText(const NvList& nv, int indent, std::string* out) {
  for (const NvPair& p : nv) AppendPair(p, indent, out);
}

Status AppendNvListStats(const NvList& nv, size_t capacity, bool verbose, std::string* out) {
  // XDR sizes; each gathered list's own framing (an empty list's size) is
  // not the pairs' and is taken off.
  UZFS_ASSIGN_OR_RETURN(std::vector<uint8_t> empty, NvList(0).EncodeXdr());
  UZFS_ASSIGN_OR_RETURN(std::vector<uint8_t> whole, nv.EncodeXdr());
  Gathered g;
  UZFS_RETURN_IF_ERROR(Gather(nv, &g));
  const size_t total = whole.size();
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "\n\nZFS Label NVList Config Stats:\n  %d bytes used, %d bytes free (using %4.1f%%)\n\n",
                static_cast<int>(total), static_cast<int>(capacity - total),
                100.0 * static_cast<double>(total) / static_cast<double>(capacity));
  *out += buf;
  size_t sum = 0;
  const auto row = [&](const char* what, int count, size_t size) {
    std::snprintf(buf, sizeof buf, "%12s %4d %6d bytes (%5.2f%%)\n", what, count, static_cast<int>(size),
                  100.0 * static_cast<double>(size) / static_cast<double>(total));
    *out += buf;
  };
  const struct {
    const char* what;
    const NvList* list;
  } kinds[] = {{"integers:", &g.integers}, {"strings:", &g.strings}, {"booleans:", &g.flags}};
  for (const auto& k : kinds) {
    UZFS_ASSIGN_OR_RETURN(std::vector<uint8_t> enc, k.list->EncodeXdr());
    const size_t size = enc.size() - empty.size();
    sum += size;
    row(k.what, static_cast<int>(k.list->size()), size);
  }
  row("nvlists:", g.lists, total - sum);
  *out += "\n";
  if (g.leaves > 0) {
    const size_t average = g.leaf_bytes / static_cast<size_t>(g.leaves);
    std::snprintf(buf, sizeof buf, "%12s %4d %6d bytes average\n%24d bytes largest\n", "leaf vdevs:", g.leaves,
                  static_cast<int>(average), static_cast<int>(g.largest_leaf));
    *out += buf;
    if (verbose && average > 0) {
      std::snprintf(buf, sizeof buf, "  space for %d additional leaf vdevs\n",
                    static_cast<int>((capacity - total) / average));
      *out += buf;
    }
  }
  *out += "\n";
  return Status::Ok();
}

}  // namespace uzfs::zdb
