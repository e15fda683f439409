#include "nn/token_layout.h"

#include <ATen/ATen.h>

#include "util/error.h"

namespace translution {
namespace {

// Index of spatial offset (dy, dx) in the (2H-1) x (2W-1) grid, row-major.
int64_t offset_entry(const TokenLayout& l, int64_t dy, int64_t dx) {
  return (dy + l.height - 1) * (2 * l.width - 1) + (dx + l.width - 1);
}

struct Position {
  bool cls;
  int64_t y, x;
};

Position position(const TokenLayout& l, int64_t token) {
  if (l.cls && token == 0) return {true, 0, 0};
  const int64_t p = token - (l.cls ? 1 : 0);
  return {false, p / l.width, p % l.width};
}

// The paper's entry for pair (query i, source j): offset p_i - p_j, or a CLS matrix.
int64_t relative_entry(const TokenLayout& l, int64_t i, int64_t j) {
  const Position a = position(l, i), b = position(l, j);
  const int64_t R = (2 * l.height - 1) * (2 * l.width - 1);
  if (a.cls && b.cls) return R;  // CLS attends to itself
  if (a.cls) return R + 1;       // image token into CLS ("in")
  if (b.cls) return R + 2;       // CLS out to an image token ("out")
  return offset_entry(l, a.y - b.y, a.x - b.x);
}

// Causal 1-D (Appendix C): only delta = i - j >= 0 is ever used, so L matrices for
// L positions, then CLS's three. Hidden pairs point at entry 0 (j > i) or at "out
// of CLS" (a position reading CLS); valid masks both out.
int64_t causal_entry(const TokenLayout& l, int64_t i, int64_t j) {
  const int64_t L = l.positions(), first = l.cls ? 1 : 0, pi = i - first, pj = j - first;
  if (l.cls && i == 0) return j == 0 ? L : L + 1;  // CLS itself, or a position into CLS
  if (l.cls && j == 0) return L + 2;               // out of CLS (hidden)
  return pj <= pi ? pi - pj : 0;
}

// Whether query i sees source j: always, unless causal, where positions see earlier
// positions and CLS (if any) sees all and is seen by none but itself.
bool pair_visible(const TokenLayout& l, int64_t i, int64_t j) {
  const int64_t first = l.cls ? 1 : 0;
  return !l.causal || (l.cls && i == 0) || (j >= first && j <= i);
}

// CLS's three matrices (self, in, out) at entries first, first + 1, first + 2; in and
// out mirror each other.
void add_cls_entries(RelativeTable& t, int64_t first) {
  t.info.push_back({EntryInfo::Kind::ClsSelf});
  t.info.push_back({EntryInfo::Kind::ClsIn});
  t.info.push_back({EntryInfo::Kind::ClsOut});
  t.mirror.insert(t.mirror.end(), {first, first + 2, first + 1});
}

}  // namespace

TokenLayout TokenLayout::grid(int64_t height, int64_t width, bool cls) {
  TokenLayout l;
  l.kind = Kind::Grid2D;
  l.height = height;
  l.width = width;
  l.cls = cls;
  return l;
}

TokenLayout TokenLayout::sequence(int64_t length, bool causal, bool cls) {
  TokenLayout l;
  l.kind = Kind::Sequence1D;
  l.height = 1;
  l.width = length;
  l.causal = causal;
  l.cls = cls;
  return l;
}

std::string TokenLayout::describe() const {
  std::string s = kind == Kind::Grid2D
                      ? std::to_string(height) + "x" + std::to_string(width) + " grid"
                      : std::string(causal ? "causal " : "") + "sequence of " + std::to_string(width);
  return s + (cls ? " + CLS" : "");
}

void TokenLayout::validate() const {
  if (height < 1 || width < 1)
    throw Error("token layout " + describe() + ": needs at least one position in each direction");
  if (causal && kind != Kind::Sequence1D) throw Error("causal masking is only defined for 1-D sequences");
}

RelativeTable make_relative_table(const TokenLayout& layout, PairEncoding encoding) {
  layout.validate();
  RelativeTable t;
  t.layout = layout;
  t.encoding = encoding;
  const int64_t N = layout.tokens();
  t.entry_of.resize(size_t(N * N));
  t.visible.resize(size_t(N * N));
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const size_t p = size_t(i * N + j);
      t.visible[p] = pair_visible(layout, i, j) ? 1 : 0;
      if (encoding == PairEncoding::Absolute)
        t.entry_of[p] = i * N + j;
      else if (layout.causal)
        t.entry_of[p] = causal_entry(layout, i, j);
      else
        t.entry_of[p] = relative_entry(layout, i, j);
    }
  t.valid = at::tensor(t.visible, at::kByte).view({N, N}).to(at::kBool);
  t.entry = at::tensor(t.entry_of, at::kLong).view({N, N});

  if (encoding == PairEncoding::Absolute) {
    // One matrix per pair; the mirror of (i, j) is (j, i).
    t.entries = N * N;
    for (int64_t e = 0; e < t.entries; ++e) {
      t.info.push_back({EntryInfo::Kind::Pair, 0, 0, e / N, e % N});
      t.mirror.push_back((e % N) * N + e / N);
    }
  } else if (layout.causal) {
    // Keys use Wk[-delta]: entry d of the key bank holds it, so the mirror of d is d.
    const int64_t L = layout.positions();
    t.entries = L + (layout.cls ? 3 : 0);
    for (int64_t d = 0; d < L; ++d) {
      t.info.push_back({EntryInfo::Kind::Offset, 0, d, 0, 0});
      t.mirror.push_back(d);
    }
    if (layout.cls) add_cls_entries(t, L);
  } else {
    const int64_t rows = 2 * layout.height - 1, cols = 2 * layout.width - 1, R = rows * cols;
    t.entries = R + (layout.cls ? 3 : 0);
    for (int64_t dy = -(layout.height - 1); dy <= layout.height - 1; ++dy)
      for (int64_t dx = -(layout.width - 1); dx <= layout.width - 1; ++dx) {
        t.info.push_back({EntryInfo::Kind::Offset, dy, dx, 0, 0});
        t.mirror.push_back(offset_entry(layout, -dy, -dx));
      }
    if (layout.cls) add_cls_entries(t, R);
  }
  return t;
}

}  // namespace translution
