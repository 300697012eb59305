// fletcher4: the scalar reference every SIMD kernel is tested against, and
// the lane-combination coefficients (derivation in fletcher4_impl.h).
#include <cstring>

#include "zfs/util/endian.h"
#include "zfs/util/fletcher4_impl.h"

namespace uzfs::fletcher4 {

void ScalarStep(State* s, const uint32_t* w, size_t count, bool swap) {
  uint64_t a = s->a, b = s->b, c = s->c, d = s->d;
  const auto* p = reinterpret_cast<const uint8_t*>(w);
  for (size_t i = 0; i < count; i++) {
    uint32_t v = swap ? LoadBE32(p + 4 * i) : LoadLE32(p + 4 * i);
    a += v;
    b += a;
    c += b;
    d += c;
  }
  *s = State{a, b, c, d};
}

namespace {

// Weight of a word as a function of m (rounds left), for lane i of L.
int64_t WeightB(int64_t t) { return t; }
int64_t WeightC(int64_t t) { return t * (t + 1) / 2; }
int64_t WeightD(int64_t t) { return t * (t + 1) * (t + 2) / 6; }

// Writes p(m) = delta*1 + gamma*m + beta*C(m+1,2) + alpha*C(m+2,3) as
// {delta, gamma, beta, alpha}, from p's values at m = 0..3.
void Solve(int64_t p0, int64_t p1, int64_t p2, int64_t p3, int64_t out[4]) {
  const int64_t q1 = p1 - p0, q2 = p2 - p0, q3 = p3 - p0;
  const int64_t alpha = q3 - 3 * q2 + 3 * q1;
  const int64_t beta = q2 - 2 * q1 - 2 * alpha;
  const int64_t gamma = q1 - beta - alpha;
  out[0] = p0;
  out[1] = gamma;
  out[2] = beta;
  out[3] = alpha;
}

}  // namespace

LaneCoefficients CoefficientsFor(int lanes, int i) {
  LaneCoefficients k{};
  auto t = [&](int64_t m) { return m * lanes - i; };
  Solve(WeightB(t(0)), WeightB(t(1)), WeightB(t(2)), WeightB(t(3)), k.b);
  Solve(WeightC(t(0)), WeightC(t(1)), WeightC(t(2)), WeightC(t(3)), k.c);
  Solve(WeightD(t(0)), WeightD(t(1)), WeightD(t(2)), WeightD(t(3)), k.d);
  return k;
}

void ScalarNative(const void* buf, size_t size, Checksum256* out) {
  State s;
  ScalarStep(&s, static_cast<const uint32_t*>(buf), size / 4, false);
  Finish(s, out);
}

void ScalarByteswap(const void* buf, size_t size, Checksum256* out) {
  State s;
  ScalarStep(&s, static_cast<const uint32_t*>(buf), size / 4, true);
  Finish(s, out);
}

}  // namespace uzfs::fletcher4
