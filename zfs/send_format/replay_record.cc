// Field offsets of the 312-byte send stream record. Offsets count from the
// start of the record: 0 type, 4 payload length, then the record's body.
#include "zfs/send_format/replay_record.h"

#include <cstring>
#include <string>

#include "zfs/util/endian.h"

namespace uzfs::send {
namespace {

// Reads fields in the stream's byte order.
class FieldReader {
 public:
  FieldReader(const uint8_t* p, bool swap) : p_(p), swap_(swap) {}
  uint8_t U8(size_t off) const { return p_[off]; }
  uint32_t U32(size_t off) const {
    const uint32_t v = LoadLE32(p_ + off);
    return swap_ ? ByteSwap32(v) : v;
  }
  uint64_t U64(size_t off) const {
    const uint64_t v = LoadLE64(p_ + off);
    return swap_ ? ByteSwap64(v) : v;
  }
  Checksum256 Sum(size_t off) const {
    Checksum256 c;
    for (int i = 0; i < 4; ++i) c.word[i] = U64(off + 8 * i);
    return c;
  }

 private:
  const uint8_t* p_;
  bool swap_;
};

void PutSum(uint8_t* p, const Checksum256& c) {
  for (int i = 0; i < 4; ++i) StoreLE64(p + 8 * i, c.word[i]);
}

uint64_t RoundUp8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

struct EncodeBody {
  uint8_t* p;
  void operator()(const BeginRecord& b) const {
    StoreLE64(p + 8, b.magic);
    StoreLE64(p + 16, static_cast<uint64_t>(b.header_type) | (uint64_t{b.features} << 2));
    StoreLE64(p + 24, b.creation_time);
    StoreLE32(p + 32, b.objset_type);
    StoreLE32(p + 36, b.flags);
    StoreLE64(p + 40, b.to_guid);
    StoreLE64(p + 48, b.from_guid);
    std::memcpy(p + 56, b.to_name.data(), std::min(b.to_name.size(), kMaxNameLen - 1));
  }
  void operator()(const EndRecord& e) const {
    PutSum(p + 8, e.checksum);
    StoreLE64(p + 40, e.to_guid);
  }
  void operator()(const ObjectRecord& o) const {
    StoreLE64(p + 8, o.object);
    StoreLE32(p + 16, o.type);
    StoreLE32(p + 20, o.bonus_type);
    StoreLE32(p + 24, o.block_size);
    StoreLE32(p + 28, o.bonus_len);
    p[32] = o.checksum_type;
    p[33] = o.compress;
    p[34] = o.dn_slots;
    p[35] = o.flags;
    StoreLE32(p + 36, o.raw_bonus_len);
    StoreLE64(p + 40, o.to_guid);
    p[48] = o.indirect_block_shift;
    p[49] = o.levels;
    p[50] = o.block_pointers;
    StoreLE64(p + 56, o.max_block_id);
  }
  void operator()(const FreeObjectsRecord& f) const {
    StoreLE64(p + 8, f.first_object);
    StoreLE64(p + 16, f.count);
    StoreLE64(p + 24, f.to_guid);
  }
  void operator()(const WriteRecord& w) const {
    StoreLE64(p + 8, w.object);
    StoreLE32(p + 16, w.type);
    StoreLE64(p + 24, w.offset);
    StoreLE64(p + 32, w.logical_size);
    StoreLE64(p + 40, w.to_guid);
    p[48] = w.checksum_type;
    p[49] = w.flags;
    p[50] = w.compression;
    PutSum(p + 56, w.key_checksum);
    StoreLE64(p + 88, w.key_prop);
    StoreLE64(p + 96, w.compressed_size);
  }
  void operator()(const FreeRecord& f) const {
    StoreLE64(p + 8, f.object);
    StoreLE64(p + 16, f.offset);
    StoreLE64(p + 24, f.length);
    StoreLE64(p + 32, f.to_guid);
  }
  void operator()(const SpillRecord& s) const {
    StoreLE64(p + 8, s.object);
    StoreLE64(p + 16, s.length);
    StoreLE64(p + 24, s.to_guid);
  }
  void operator()(const WriteEmbeddedRecord& w) const {
    StoreLE64(p + 8, w.object);
    StoreLE64(p + 16, w.offset);
    StoreLE64(p + 24, w.length);
    StoreLE64(p + 32, w.to_guid);
    p[40] = w.compression;
    p[41] = w.embedded_type;
    StoreLE32(p + 48, w.logical_size);
    StoreLE32(p + 52, w.physical_size);
  }
};

template <class T>
constexpr RecordType TypeOf();
template <> constexpr RecordType TypeOf<BeginRecord>() { return RecordType::kBegin; }
template <> constexpr RecordType TypeOf<EndRecord>() { return RecordType::kEnd; }
template <> constexpr RecordType TypeOf<ObjectRecord>() { return RecordType::kObject; }
template <> constexpr RecordType TypeOf<FreeObjectsRecord>() { return RecordType::kFreeObjects; }
template <> constexpr RecordType TypeOf<WriteRecord>() { return RecordType::kWrite; }
template <> constexpr RecordType TypeOf<FreeRecord>() { return RecordType::kFree; }
template <> constexpr RecordType TypeOf<SpillRecord>() { return RecordType::kSpill; }
template <> constexpr RecordType TypeOf<WriteEmbeddedRecord>() { return RecordType::kWriteEmbedded; }

}  // namespace

const char* RecordTypeName(RecordType t) {
  switch (t) {
    case RecordType::kBegin: return "begin";
    case RecordType::kObject: return "object";
    case RecordType::kFreeObjects: return "freeobjects";
    case RecordType::kWrite: return "write";
    case RecordType::kFree: return "free";
    case RecordType::kEnd: return "end";
    case RecordType::kWriteByRef: return "write_byref";
    case RecordType::kSpill: return "spill";
    case RecordType::kWriteEmbedded: return "write_embedded";
    case RecordType::kObjectRange: return "object_range";
    case RecordType::kRedact: return "redact";
  }
  return "unknown";
}

RecordType Record::type() const {
  return std::visit([](const auto& b) { return TypeOf<std::decay_t<decltype(b)>>(); }, body);
}

std::array<uint8_t, kRecordSize> EncodeRecord(const Record& r) {
  std::array<uint8_t, kRecordSize> out{};
  StoreLE32(out.data(), static_cast<uint32_t>(r.type()));
  StoreLE32(out.data() + 4, r.payload_len_field);
  std::visit(EncodeBody{out.data()}, r.body);
  // A begin record's name runs over the checksum's place; it has none.
  if (r.type() != RecordType::kBegin) PutSum(out.data() + kRecordChecksumOffset, r.stored_checksum);
  return out;
}

Result<bool> BeginIsByteSwapped(std::span<const uint8_t, kRecordSize> bytes) {
  const uint32_t type = LoadLE32(bytes.data());
  const uint64_t magic = LoadLE64(bytes.data() + 8);
  if (type == 0 && magic == kBackupMagic) return false;
  if (type == 0 && magic == ByteSwap64(kBackupMagic)) return true;
  return Status::Corruption("not a send stream: the first record is not a begin record with the stream magic");
}

Result<Record> DecodeRecord(std::span<const uint8_t, kRecordSize> bytes, bool swap) {
  const FieldReader f(bytes.data(), swap);
  Record r;
  r.payload_len_field = f.U32(4);
  const uint32_t raw_type = f.U32(0);
  const auto type = static_cast<RecordType>(raw_type);
  if (type != RecordType::kBegin) r.stored_checksum = f.Sum(kRecordChecksumOffset);
  switch (type) {
    case RecordType::kBegin: {
      BeginRecord b;
      b.magic = f.U64(8);
      const uint64_t versioninfo = f.U64(16);
      b.header_type = static_cast<HeaderType>(versioninfo & 3);
      b.features = static_cast<uint32_t>((versioninfo >> 2) & 0x3fffffff);
      b.creation_time = f.U64(24);
      b.objset_type = f.U32(32);
      b.flags = f.U32(36);
      b.to_guid = f.U64(40);
      b.from_guid = f.U64(48);
      const char* name = reinterpret_cast<const char*>(bytes.data() + 56);
      b.to_name.assign(name, strnlen(name, kMaxNameLen));
      if (b.to_name.size() == kMaxNameLen) return Status::Corruption("send stream: the begin record's name is not terminated");
      r.body = std::move(b);
      break;
    }
    case RecordType::kEnd:
      r.body = EndRecord{f.Sum(8), f.U64(40)};
      break;
    case RecordType::kObject: {
      ObjectRecord o;
      o.object = f.U64(8);
      o.type = f.U32(16);
      o.bonus_type = f.U32(20);
      o.block_size = f.U32(24);
      o.bonus_len = f.U32(28);
      o.checksum_type = f.U8(32);
      o.compress = f.U8(33);
      o.dn_slots = f.U8(34);
      o.flags = f.U8(35);
      o.raw_bonus_len = f.U32(36);
      o.to_guid = f.U64(40);
      o.indirect_block_shift = f.U8(48);
      o.levels = f.U8(49);
      o.block_pointers = f.U8(50);
      o.max_block_id = f.U64(56);
      r.body = o;
      break;
    }
    case RecordType::kFreeObjects:
      r.body = FreeObjectsRecord{f.U64(8), f.U64(16), f.U64(24)};
      break;
    case RecordType::kWrite: {
      WriteRecord w;
      w.object = f.U64(8);
      w.type = f.U32(16);
      w.offset = f.U64(24);
      w.logical_size = f.U64(32);
      w.to_guid = f.U64(40);
      w.checksum_type = f.U8(48);
      w.flags = f.U8(49);
      w.compression = f.U8(50);
      w.key_checksum = f.Sum(56);
      w.key_prop = f.U64(88);
      w.compressed_size = f.U64(96);
      r.body = w;
      break;
    }
    case RecordType::kFree:
      r.body = FreeRecord{f.U64(8), f.U64(16), f.U64(24), f.U64(32)};
      break;
    case RecordType::kSpill:
      r.body = SpillRecord{f.U64(8), f.U64(16), f.U64(24)};
      break;
    case RecordType::kWriteEmbedded: {
      WriteEmbeddedRecord w;
      w.object = f.U64(8);
      w.offset = f.U64(16);
      w.length = f.U64(24);
      w.to_guid = f.U64(32);
      w.compression = f.U8(40);
      w.embedded_type = f.U8(41);
      w.logical_size = f.U32(48);
      w.physical_size = f.U32(52);
      r.body = w;
      break;
    }
    case RecordType::kWriteByRef:
      return Status::NotSupported("send stream: deduplicated streams (write_byref records) are not received by uzfs");
    case RecordType::kObjectRange:
      return Status::NotSupported("send stream: raw (encrypted) streams (object_range records) are not received by uzfs");
    case RecordType::kRedact:
      return Status::NotSupported("send stream: redacted streams are not received by uzfs");
    default:
      return Status::Corruption("send stream: unknown record type " + std::to_string(raw_type));
  }
  return r;
}

Result<uint64_t> PayloadLength(const Record& r) {
  uint64_t len = 0;
  uint64_t limit = kMaxBlockPayload;
  switch (r.type()) {
    case RecordType::kBegin:
      len = r.payload_len_field;
      limit = kMaxBeginPayload;
      break;
    case RecordType::kObject:
      len = RoundUp8(std::get<ObjectRecord>(r.body).bonus_len);
      break;
    case RecordType::kWrite: {
      const auto& w = std::get<WriteRecord>(r.body);
      len = w.compression != 0 && w.compressed_size != 0 ? w.compressed_size : w.logical_size;
      break;
    }
    case RecordType::kSpill:
      len = std::get<SpillRecord>(r.body).length;
      break;
    case RecordType::kWriteEmbedded:
      len = RoundUp8(std::get<WriteEmbeddedRecord>(r.body).physical_size);
      break;
    default:
      break;
  }
  if (len > limit) {
    return Status::Corruption(std::string("send stream: a ") + RecordTypeName(r.type()) + " record announces " +
                              std::to_string(len) + " bytes of payload, more than any stream carries");
  }
  return len;
}

}  // namespace uzfs::send
