// Reconstruction of missing columns and the combinatorial search for
// silently wrong ones; the math is described in raidz/reconstruct.h.
#include "raidz/reconstruct.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "raidz/gf256.h"

namespace uzfs::raidz {
namespace {

using internal::RegenParity;

}  // namespace

Status Reconstruct(std::span<const Column> cols, uint32_t nparity,
                   std::span<const uint32_t> missing, const ParityOps* ops) {
  UZFS_ASSIGN_OR_RETURN(const uint32_t n, internal::CheckColumns(cols, nparity));
  if (missing.size() > nparity) return Status::InvalidArgument("more columns missing than parity");
  if (ops == nullptr) ops = &ActiveKernel();
  unsigned lost_rows = 0;
  uint32_t md[3];
  int k = 0;
  for (uint32_t c : missing) {
    if (c >= cols.size()) return Status::InvalidArgument("missing column out of range");
    if (c < nparity) {
      if (lost_rows & (1u << c)) return Status::InvalidArgument("missing column listed twice");
      lost_rows |= 1u << c;
    } else {
      for (int x = 0; x < k; x++)
        if (md[x] == c - nparity) return Status::InvalidArgument("missing column listed twice");
      md[k++] = c - nparity;
    }
  }
  if (k > 0) {
    for (int x = 1; x < k; x++)  // insertion sort of at most 3
      for (int y = x; y > 0 && md[y - 1] > md[y]; y--) std::swap(md[y - 1], md[y]);
    // Use the first k surviving parity rows (P is the cheapest, then Q, R).
    unsigned rows = 0;
    int got = 0;
    uint8_t g[3];
    KernelArgs a;
    for (uint32_t j = 0; j < nparity && got < k; j++) {
      if (lost_rows & (1u << j)) continue;
      rows |= 1u << j;
      a.par[got] = cols[j].data;
      g[got++] = gf256::kParityGen[j];
    }
    if (got < k) return Status::InvalidArgument("not enough parity left to reconstruct");
    uint8_t m[9];
    for (int j = 0; j < k; j++)
      for (int x = 0; x < k; x++) m[j * k + x] = gf256::Pow(g[j], n - 1 - md[x]);
    if (!gf256::InvertMatrix(m, k)) return Status::Corruption("singular raidz matrix");
    const uint8_t* data[255];
    size_t dlen[255];
    for (uint32_t i = 0; i < n; i++) {
      data[i] = cols[nparity + i].data;
      dlen[i] = cols[nparity + i].size;
    }
    for (int x = 0; x < k; x++) {
      data[md[x]] = nullptr;
      a.out[x] = cols[nparity + md[x]].data;
      a.outlen[x] = cols[nparity + md[x]].size;
    }
    a.data = data;
    a.dlen = dlen;
    a.n = n;
    a.len = cols[0].size;
    a.rows = rows;
    std::memcpy(a.mat, m, sizeof(m));
    ops->rec(a);
  }
  if (lost_rows != 0) RegenParity(cols, nparity, n, lost_rows, *ops);
  return Status::Ok();
}

Result<std::vector<uint32_t>> CombinatorialReconstruct(std::span<const Column> cols,
                                                       uint32_t nparity, const VerifyFn& verify,
                                                       const ParityOps* ops) {
  UZFS_ASSIGN_OR_RETURN(const uint32_t n, internal::CheckColumns(cols, nparity));
  if (ops == nullptr) ops = &ActiveKernel();
  const uint32_t total = static_cast<uint32_t>(cols.size());
  const std::span<const Column> data_cols = cols.subspan(nparity);
  std::vector<uint32_t> bad;

  // Checks parity against the (now verified) data; rewrites and reports any
  // parity column that differs.
  auto fix_parity = [&]() {
    std::vector<uint8_t> mem(nparity * cols[0].size);
    std::vector<Column> tmp(cols.begin(), cols.end());
    for (uint32_t j = 0; j < nparity; j++) tmp[j].data = mem.data() + j * cols[0].size;
    RegenParity(tmp, nparity, n, (1u << nparity) - 1, *ops);
    for (uint32_t j = 0; j < nparity; j++) {
      if (std::memcmp(tmp[j].data, cols[j].data, cols[j].size) != 0) {
        std::memcpy(cols[j].data, tmp[j].data, cols[j].size);
        if (std::find(bad.begin(), bad.end(), j) == bad.end()) bad.push_back(j);
      }
    }
    std::sort(bad.begin(), bad.end());
  };

  if (verify(data_cols)) {
    fix_parity();
    return bad;
  }
  std::vector<uint8_t> saved;
  for (uint32_t k = 1; k <= nparity && k <= total; k++) {
    // Enumerate k-subsets of the columns in lexicographic order.
    uint32_t idx[3] = {0, 1, 2};
    for (;;) {
      bool has_data = false;
      for (uint32_t x = 0; x < k; x++) has_data = has_data || idx[x] >= nparity;
      if (has_data) {
        saved.clear();
        for (uint32_t x = 0; x < k; x++)
          saved.insert(saved.end(), cols[idx[x]].data, cols[idx[x]].data + cols[idx[x]].size);
        UZFS_RETURN_IF_ERROR(Reconstruct(cols, nparity, std::span<const uint32_t>(idx, k), ops));
        if (verify(data_cols)) {
          size_t pos = 0;
          for (uint32_t x = 0; x < k; x++) {
            const Column& c = cols[idx[x]];
            if (std::memcmp(saved.data() + pos, c.data, c.size) != 0) bad.push_back(idx[x]);
            pos += c.size;
          }
          fix_parity();
          return bad;
        }
        size_t pos = 0;
        for (uint32_t x = 0; x < k; x++) {
          const Column& c = cols[idx[x]];
          std::memcpy(c.data, saved.data() + pos, c.size);
          pos += c.size;
        }
      }
      // Next combination.
      int x = static_cast<int>(k) - 1;
      while (x >= 0 && idx[x] == total - k + static_cast<uint32_t>(x)) x--;
      if (x < 0) break;
      idx[x]++;
      for (uint32_t y = static_cast<uint32_t>(x) + 1; y < k; y++) idx[y] = idx[y - 1] + 1;
    }
  }
  return Status::Corruption("raidz: no combination of up to nparity columns verifies");
}

}  // namespace uzfs::raidz
