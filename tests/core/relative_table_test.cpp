#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "cpu/blas_gemm.h"
#include "cpu/pair_projection.h"
#include "nn/offset_magnitudes.h"
#include "nn/pair_order.h"
#include "nn/relative_projection.h"
#include "nn/token_layout.h"
#include "nn/translution_attention.h"
#include "test_switches.h"
#include "util/error.h"

using namespace translution;

TEST(RelativeTable, GridEntriesAreOffsetsWithRelativeCls) {
  const auto t = make_relative_table(TokenLayout::grid(3, 4, true));
  ASSERT_EQ(t.entries, 5 * 7 + 3);
  auto e = t.entry.accessor<int64_t, 2>();
  for (int64_t i = 1; i < 13; ++i)
    for (int64_t j = 1; j < 13; ++j) {
      const EntryInfo& info = t.info[size_t(e[i][j])];
      ASSERT_EQ(info.kind, EntryInfo::Kind::Offset);
      EXPECT_EQ(info.dy, (i - 1) / 4 - (j - 1) / 4);  // delta = p_i - p_j
      EXPECT_EQ(info.dx, (i - 1) % 4 - (j - 1) % 4);
    }
  EXPECT_EQ(t.info[size_t(e[0][0])].kind, EntryInfo::Kind::ClsSelf);
  EXPECT_EQ(t.info[size_t(e[0][5])].kind, EntryInfo::Kind::ClsIn);   // CLS gathers from an image token
  EXPECT_EQ(t.info[size_t(e[5][0])].kind, EntryInfo::Kind::ClsOut);  // an image token gathers from CLS
}

// The key bank is stored mirrored: the paper's k_ji uses Wk[delta_ji] = Wk[-delta_ij],
// which must be exactly mirror[entry(i, j)] for every pair, CLS included.
TEST(RelativeTable, MirrorMapsEachPairToItsTranspose) {
  for (const auto& layout : {TokenLayout::grid(3, 4, true), TokenLayout::grid(2, 2, false),
                             TokenLayout::sequence(5, false, true)}) {
    const auto t = make_relative_table(layout);
    auto e = t.entry.accessor<int64_t, 2>();
    for (int64_t i = 0; i < t.tokens(); ++i)
      for (int64_t j = 0; j < t.tokens(); ++j)
        ASSERT_EQ(t.mirror[size_t(e[i][j])], e[j][i]) << layout.describe();
  }
  const auto abs = make_relative_table(TokenLayout::grid(2, 2, true), PairEncoding::Absolute);
  auto e = abs.entry.accessor<int64_t, 2>();
  EXPECT_EQ(abs.mirror[size_t(e[1][3])], e[3][1]);
}

TEST(RelativeTable, CausalSequenceHidesTheFuture) {
  const auto t = make_relative_table(TokenLayout::sequence(4, true));
  EXPECT_EQ(t.entries, 4);
  EXPECT_TRUE(t.valid[3][1].item<bool>());
  EXPECT_FALSE(t.valid[1][3].item<bool>());
  EXPECT_EQ(t.entry[3][1].item<int64_t>(), 2);
}

TEST(RelativeTable, RejectsImpossibleLayouts) {
  EXPECT_THROW(make_relative_table(TokenLayout::grid(0, 3)), Error);
  TokenLayout causal_grid = TokenLayout::grid(2, 2);
  causal_grid.causal = true;
  EXPECT_THROW(make_relative_table(causal_grid), Error);
}

// A causal sequence with CLS: CLS reads every position, positions read earlier
// positions and never CLS (it has seen later ones).
TEST(RelativeTable, CausalSequenceWithClsReadsForwardOnly) {
  const auto t = make_relative_table(TokenLayout::sequence(4, true, true));
  ASSERT_EQ(t.entries, 4 + 3);
  for (int64_t j = 0; j < 5; ++j) EXPECT_TRUE(t.valid[0][j].item<bool>()) << j;
  for (int64_t i = 1; i < 5; ++i) {
    EXPECT_FALSE(t.valid[i][0].item<bool>()) << i;
    for (int64_t j = 1; j < 5; ++j) {
      EXPECT_EQ(t.valid[i][j].item<bool>(), j <= i) << i << "," << j;
      if (j <= i) {
        EXPECT_EQ(t.entry[i][j].item<int64_t>(), i - j);
      }
    }
  }
  EXPECT_EQ(t.entry[0][0].item<int64_t>(), 4);  // CLS itself
  EXPECT_EQ(t.entry[0][3].item<int64_t>(), 5);  // a position into CLS
  EXPECT_EQ(t.mirror[5], 6);
}

TEST(PairOrder, SortsEveryVisiblePairOnceByEntry) {
  const auto t = make_relative_table(TokenLayout::grid(3, 3, true));
  const PairOrder o = make_pair_order(t);
  EXPECT_EQ(o.pair_of_row.size(0), 10 * 10);
  EXPECT_EQ(std::get<0>(at::_unique(o.pair_of_row)).size(0), 100);
  EXPECT_EQ(o.entry_offset.back(), 100);
  // The centre offset (0, 0) is used by the 9 image tokens with themselves.
  const int64_t centre = 2 * 5 + 2;
  EXPECT_EQ(o.entry_offset[size_t(centre) + 1] - o.entry_offset[size_t(centre)], 9);
  const auto causal = make_pair_order(make_relative_table(TokenLayout::sequence(5, true)));
  EXPECT_EQ(causal.pair_of_row.size(0), 15);  // only j <= i
}

TEST(OffsetMagnitudes, KeyNormsAreReportedInThePapersIndexing) {
  const auto t = make_relative_table(TokenLayout::grid(2, 2, true));
  at::Tensor bank = at::zeros({t.entries, 2, 2});
  bank[0].fill_(1.0);  // stored entry 0 = offset (-1, -1), holds the paper's Wk at (+1, +1)
  const OffsetMagnitudes k = bank_magnitudes("k", bank, t), v = bank_magnitudes("v", bank, t);
  EXPECT_FLOAT_EQ(v.norms[0].item<float>(), 2.0f);
  EXPECT_FLOAT_EQ(k.norms[0].item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(k.norms[8].item<float>(), 2.0f);  // (+1, +1) is the last offset of the 3x3 grid
}

// On the CPU, auto goes per matrix wherever the products take the raw BLAS path;
// behind at::mm, every token for small matrices at small batch. Forcing wins.
TEST(ProjectionAlgorithm, AutoOnTheCpuFollowsTheProductPath) {
  const at::Tensor small = at::empty({172, 24, 24}), large = at::empty({172, 192, 192});
  const EngineOptions engine, reference = test_support::reference_options();  // projection Auto
  const auto every_token = [](const EngineOptions& o, const at::Tensor& bank, int64_t batch) {
    return projection_for(o, bank, 50, batch) == ProjectionAlgorithm::AllTokens;
  };
  EXPECT_EQ(every_token(engine, small, 1), !blas_gemm_usable(small));
  EXPECT_TRUE(every_token(reference, small, 8));
  EXPECT_FALSE(every_token(reference, small, 9));
  EXPECT_EQ(projection_for(reference, large, 50, 1), ProjectionAlgorithm::PerMatrix);
  const auto forced = [](EngineOptions o, ProjectionAlgorithm a) {
    return with(o, &EngineOptions::projection, a);
  };
  EXPECT_TRUE(every_token(forced(reference, ProjectionAlgorithm::AllTokens), large, 64));
  EXPECT_EQ(projection_for(forced(engine, ProjectionAlgorithm::PerMatrix), small, 50, 1),
            ProjectionAlgorithm::PerMatrix);
  EXPECT_EQ(projection_for(forced(engine, ProjectionAlgorithm::OffsetBatched), small, 50, 1),
            ProjectionAlgorithm::OffsetBatched);
}

// On a GPU, auto projects every token while the all-token intermediate is small, and
// takes the offset-batched products beyond: per matrix never (its launches lose there).
TEST(ProjectionAlgorithm, AutoOnAGpuChoosesByTheAllTokenIntermediate) {
  const auto bytes = [](double tokens, double batch, double entries, double width) {
    return tokens * batch * entries * width * 4.0;
  };
  // Translution ViT-A/12's [172, 192, 192] bank: one image, then batch 32.
  EXPECT_EQ(auto_projection_on_gpu(bytes(50, 1, 172, 192)), ProjectionAlgorithm::AllTokens);
  EXPECT_EQ(auto_projection_on_gpu(bytes(50, 32, 172, 192)), ProjectionAlgorithm::OffsetBatched);
  // LoR's [172, 24, 24]: batch 32, then 256.
  EXPECT_EQ(auto_projection_on_gpu(bytes(50, 32, 172, 24)), ProjectionAlgorithm::AllTokens);
  EXPECT_EQ(auto_projection_on_gpu(bytes(50, 256, 172, 24)), ProjectionAlgorithm::OffsetBatched);
  EXPECT_EQ(auto_projection_on_gpu(double(kAllTokenBytesOnGpu)), ProjectionAlgorithm::AllTokens);
  EXPECT_EQ(auto_projection_on_gpu(double(kAllTokenBytesOnGpu) + 1), ProjectionAlgorithm::OffsetBatched);
}
