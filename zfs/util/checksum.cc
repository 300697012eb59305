// Block checksums (see checksum.h): fletcher2, the fletcher4 dispatcher with
// its run-time kernel choice, and sha256 through OpenSSL (which uses the
// CPU's SHA extensions when present).
#include "zfs/util/checksum.h"

#include <openssl/sha.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "zfs/util/cpu.h"
#include "zfs/util/endian.h"
#include "zfs/util/fletcher4_impl.h"

namespace uzfs {

std::string_view ChecksumName(ChecksumType t) {
  switch (t) {
    case ChecksumType::kInherit: return "inherit";
    case ChecksumType::kOn: return "on";
    case ChecksumType::kOff: return "off";
    case ChecksumType::kLabel: return "label";
    case ChecksumType::kGangHeader: return "gang_header";
    case ChecksumType::kZilog: return "zilog";
    case ChecksumType::kFletcher2: return "fletcher2";
    case ChecksumType::kFletcher4: return "fletcher4";
    case ChecksumType::kSha256: return "sha256";
    case ChecksumType::kZilog2: return "zilog2";
    case ChecksumType::kNoParity: return "noparity";
    case ChecksumType::kSha512: return "sha512";
    case ChecksumType::kSkein: return "skein";
    case ChecksumType::kEdonr: return "edonr";
    case ChecksumType::kBlake3: return "blake3";
  }
  return "unknown";
}

namespace {

template <bool kSwap>
void Fletcher2(const void* buf, size_t size, Checksum256* out) {
  const auto* p = static_cast<const uint8_t*>(buf);
  uint64_t a0 = 0, a1 = 0, b0 = 0, b1 = 0;
  for (size_t off = 0; off + 16 <= size; off += 16) {
    const uint64_t w0 = kSwap ? LoadBE64(p + off) : LoadLE64(p + off);
    const uint64_t w1 = kSwap ? LoadBE64(p + off + 8) : LoadLE64(p + off + 8);
    a0 += w0;
    a1 += w1;
    b0 += a0;
    b1 += a1;
  }
  out->word[0] = a0;
  out->word[1] = a1;
  out->word[2] = b0;
  out->word[3] = b1;
}

bool Always() { return true; }

const Fletcher4Impl kImpls[] = {
    {"scalar", &Always, &fletcher4::ScalarNative, &fletcher4::ScalarByteswap},
    {"sse2", &cpu::HasSse2, &fletcher4::Sse2Native, &fletcher4::Sse2Byteswap},
    {"avx2", &cpu::HasAvx2, &fletcher4::Avx2Native, &fletcher4::Avx2Byteswap},
    {"avx512", &cpu::HasAvx512bw, &fletcher4::Avx512Native, &fletcher4::Avx512Byteswap},
};

// Best time of a few runs over an in-cache buffer: enough to rank kernels
// whose speeds differ by integer factors, cheap enough for first use.
double TimeImpl(const Fletcher4Impl& impl, const std::vector<uint8_t>& buf) {
  double best = 1e30;
  Checksum256 ck;
  for (int rep = 0; rep < 5; rep++) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 8; i++) impl.native(buf.data(), buf.size(), &ck);
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  asm volatile("" : : "r"(&ck) : "memory");
  return best;
}

const Fletcher4Impl& ChooseImpl() {
  if (const char* want = std::getenv("UZFS_FLETCHER4_IMPL");
      want && *want && std::strcmp(want, "fastest") != 0) {
    for (const auto& impl : kImpls) {
      if (std::strcmp(impl.name, want) == 0 && impl.supported()) return impl;
    }
    std::fprintf(stderr,
                 "uzfs: UZFS_FLETCHER4_IMPL=%s is unknown or unsupported on this CPU; "
                 "using the fastest kernel\n",
                 want);
  }
  std::vector<uint8_t> buf(16384);
  for (size_t i = 0; i < buf.size(); i++) buf[i] = static_cast<uint8_t>(i * 131 + 7);
  const Fletcher4Impl* best = &kImpls[0];
  double best_time = TimeImpl(*best, buf);
  for (const auto& impl : kImpls) {
    if (&impl == &kImpls[0] || !impl.supported()) continue;
    const double t = TimeImpl(impl, buf);
    if (t < best_time) {
      best = &impl;
      best_time = t;
    }
  }
  return *best;
}

}  // namespace

std::span<const Fletcher4Impl> Fletcher4Impls() { return kImpls; }

const Fletcher4Impl& Fletcher4Selected() {
  static const Fletcher4Impl& chosen = ChooseImpl();
  return chosen;
}

void Fletcher2Native(const void* buf, size_t size, Checksum256* out) {
  Fletcher2<false>(buf, size, out);
}
void Fletcher2Byteswap(const void* buf, size_t size, Checksum256* out) {
  Fletcher2<true>(buf, size, out);
}
void Fletcher4Native(const void* buf, size_t size, Checksum256* out) {
  Fletcher4Selected().native(buf, size, out);
}
void Fletcher4Byteswap(const void* buf, size_t size, Checksum256* out) {
  Fletcher4Selected().byteswap(buf, size, out);
}

Result<Checksum256> BlockChecksum(ChecksumType type, std::span<const uint8_t> data,
                                  bool byteswap) {
  Checksum256 ck;
  switch (type) {
    case ChecksumType::kOff:
      return ck;
    case ChecksumType::kFletcher2:
      byteswap ? Fletcher2Byteswap(data.data(), data.size(), &ck)
               : Fletcher2Native(data.data(), data.size(), &ck);
      return ck;
    case ChecksumType::kOn:  // "on" is stored resolved; accept it as fletcher4
    case ChecksumType::kFletcher4:
      byteswap ? Fletcher4Byteswap(data.data(), data.size(), &ck)
               : Fletcher4Native(data.data(), data.size(), &ck);
      return ck;
    case ChecksumType::kSha256:
      Sha256(data.data(), data.size(), &ck);
      return ck;
    case ChecksumType::kSha512:
    case ChecksumType::kSkein:
    case ChecksumType::kEdonr:
    case ChecksumType::kBlake3:
      return Status::NotSupported("checksum " + std::string(ChecksumName(type)) +
                                  " is not implemented by uzfs");
    default:
      return Status::InvalidArgument("checksum " + std::string(ChecksumName(type)) +
                                     " is not a block-pointer checksum");
  }
}

void Sha256(const void* buf, size_t size, Checksum256* out) {
  uint8_t digest[SHA256_DIGEST_LENGTH];
  SHA256(static_cast<const unsigned char*>(buf), size, digest);
  for (int i = 0; i < 4; i++) out->word[i] = LoadBE64(digest + 8 * i);
}

}  // namespace uzfs
