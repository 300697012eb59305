// Fuzz target for the receiving side of a stream (zfs/send/objset_receive):
// any input read as a stream and its records applied to an empty object set
// in memory (a sync after every end record, every 64 records, and when the
// receiver asks for a later txg) must never crash, hang or take unbounded
// memory: a record it cannot apply stops it with an error. Seed corpus:
// tests/fuzz/corpus/receive/ (zfs-fuse streams, whole and cut short).
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "tests/zio/zio_test_util.h"
#include "zfs/dmu/objset_writer.h"
#include "zfs/send/objset_receive.h"
#include "zfs/send_format/stream_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace uzfs;
  constexpr uint64_t kDisk = 16ull << 20;  // small: each input zeroes it
  test::MemTarget target(1, kDisk);
  test::SectorAllocator alloc(1, kDisk);
  Zio zio(target, alloc);
  auto os = ObjsetWriter::Create(zio, ObjsetType::kZfs, ObjsetWriterOptions{});
  if (!os.ok()) return 0;
  size_t pos = 0;
  send::StreamReader reader([&](std::span<uint8_t> out) -> Result<size_t> {
    const size_t n = std::min(out.size(), size - pos);
    std::memcpy(out.data(), data + pos, n);
    pos += n;
    return n;
  });
  send::ObjsetReceiver rx(**os);
  uint64_t txg = 1;
  auto sync = [&]() -> bool {
    const bool ok = (*os)->Sync(Txg(txg)).ok();
    txg++;
    return ok;
  };
  std::vector<uint8_t> payload;
  for (int applied = 0;;) {
    auto rec = reader.Next(&payload);
    if (!rec.ok()) break;
    const send::RecordType t = rec->type();
    if (t == send::RecordType::kBegin) continue;
    if (t == send::RecordType::kEnd) {
      if (!sync()) break;
      continue;
    }
    Status s = rx.Apply(*rec, payload, Txg(txg));
    if (s.code() == Code::kBusy) {
      if (!sync()) break;
      s = rx.Apply(*rec, payload, Txg(txg));
    }
    if (!s.ok()) break;
    if (++applied % 64 == 0 && !sync()) break;
  }
  (void)sync();
  return 0;
}
