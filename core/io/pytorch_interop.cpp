#include "io/pytorch_interop.h"

#include <cmath>
#include <map>
#include <set>

#include <ATen/ATen.h>

#include "io/public_vit_layout.h"
#include "util/error.h"

namespace translution {
namespace {

using Map = PublicPiece::Map;

std::string shape_text(at::IntArrayRef sizes) { return std::string(c10::str(sizes)); }

// Our row (head h, channel 2p + s) is the public row (h, k + s dh/2) with
// k = (p + dh/4) mod dh/2: the public RoPE pairs k with k + dh/2 and turns rows
// first, ours pairs 2p with 2p + 1 and turns columns first (io/public_vit_layout.h).
// Returns, for each public row, our row.
at::Tensor ours_of_public_rows(int64_t rows, int64_t head_dim) {
  std::vector<int64_t> ours(size_t(rows), 0);
  const int64_t half = head_dim / 2, quarter = head_dim / 4;
  for (int64_t h = 0; h < rows / head_dim; ++h)
    for (int64_t p = 0; p < half; ++p)
      for (int64_t s = 0; s < 2; ++s)
        ours[size_t(h * head_dim + (p + quarter) % half + s * half)] = h * head_dim + 2 * p + s;
  return at::tensor(ours, at::kLong);
}

// The public RoPE2DWithCLS tables, [1, H, W, dh]: channel c turns with pair
// k = c mod dh/2, by row * 10000^(-4k/dh) for k < dh/4, else by column * 10000^(-4(k - dh/4)/dh).
at::Tensor public_rotary_table(int64_t height, int64_t width, int64_t head_dim, bool sine) {
  at::Tensor out = at::empty({1, height, width, head_dim}, at::kFloat);
  auto t = out.accessor<float, 4>();
  const int64_t half = head_dim / 2, quarter = head_dim / 4;
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int64_t c = 0; c < head_dim; ++c) {
        const int64_t k = c % half, m = k < quarter ? k : k - quarter;
        const double angle =
            double(k < quarter ? y : x) * std::pow(10000.0, -4.0 * double(m) / double(head_dim));
        t[0][y][x][c] = float(sine ? std::sin(angle) : std::cos(angle));
      }
  return out;
}

class Converter {
 public:
  explicit Converter(const ViT& model) : config_(model->config()) {
    for (const auto& p : model->named_parameters(true)) params_.emplace(p.key(), p.value());
    mirror_ = at::tensor(make_relative_table(config_.token_layout()).mirror, at::kLong);
    rotary_rows_ = ours_of_public_rows(config_.heads * config_.head_dim, config_.head_dim);
  }

  // Our parameter's rows that a piece covers (a view: writing to it writes the parameter).
  at::Tensor ours(const PublicPiece& piece) const {
    const at::Tensor& p = params_.at(piece.name);
    return piece.rows < 0 ? p : p.narrow(0, piece.first_row, piece.rows);
  }

  // The piece's public shape, without forming it.
  std::vector<int64_t> public_sizes(const PublicPiece& piece) const {
    if (piece.map == Map::RotaryCos || piece.map == Map::RotarySin)
      return {1, config_.grid_height(), config_.grid_width(), config_.head_dim};
    const at::IntArrayRef sizes = ours(piece).sizes();
    std::vector<int64_t> out(sizes.begin(), sizes.end());
    if (piece.map == Map::Transpose) std::swap(out[0], out[1]);
    return out;
  }

  at::Tensor to_public(const PublicPiece& piece) const {
    if (piece.map == Map::RotaryCos || piece.map == Map::RotarySin)
      return public_rotary_table(config_.grid_height(), config_.grid_width(), config_.head_dim,
                                 piece.map == Map::RotarySin);
    const at::Tensor t = ours(piece).detach().to(at::kCPU, at::kFloat);
    at::Tensor out = t;
    if (piece.map == Map::Transpose) out = t.t();
    if (piece.map == Map::MirrorOffsets) out = t.index_select(0, mirror_);  // mirroring is its own inverse
    if (piece.map == Map::RotaryRows) out = t.index_select(0, rotary_rows_);
    return piece.scale == 1 ? out.contiguous() : (out * piece.scale).contiguous();
  }

  // The inverse of to_public, for the piece's slice of a public tensor.
  at::Tensor from_public(const PublicPiece& piece, const at::Tensor& slice) const {
    at::Tensor t = piece.scale == 1 ? slice : slice / piece.scale;
    if (piece.map == Map::Transpose) t = t.t();
    if (piece.map == Map::MirrorOffsets) t = t.index_select(0, mirror_);
    if (piece.map == Map::RotaryRows) t = at::empty_like(t).index_copy_(0, rotary_rows_, t);
    return t;
  }

  const ViTConfig& config() const { return config_; }

 private:
  ViTConfig config_;
  std::map<std::string, at::Tensor> params_;
  at::Tensor mirror_, rotary_rows_;
};

at::Tensor public_tensor(const Converter& converter, const PublicTensor& t) {
  std::vector<at::Tensor> parts;
  for (const PublicPiece& piece : t.pieces) parts.push_back(converter.to_public(piece));
  return parts.size() == 1 ? parts.front() : at::cat(parts, 0);
}

// A public tensor's shape: its pieces stacked along the first axis.
std::vector<int64_t> public_sizes(const Converter& converter, const PublicTensor& t) {
  std::vector<int64_t> sizes = converter.public_sizes(t.pieces.front());
  for (size_t i = 1; i < t.pieces.size(); ++i) sizes[0] += converter.public_sizes(t.pieces[i])[0];
  return sizes;
}

void check_keys(const std::vector<PublicTensor>& layout, const std::map<std::string, at::Tensor>& given,
                const std::string& source, const std::string& family) {
  std::set<std::string> expected;
  for (const PublicTensor& t : layout) {
    expected.insert(t.key);
    if (!t.optional && !given.count(t.key))
      throw Error(source + ": '" + t.key + "' is missing: a " + family +
                  " state dict of this config has it (check --model and the sizes)");
  }
  for (const auto& [key, tensor] : given)
    if (!expected.count(key))
      throw Error(source + ": '" + key + "' is not part of a " + family +
                  " state dict of this config (check --model and the sizes)");
}

}  // namespace

StateDict export_public_state_dict(const ViT& model) {
  const Converter converter(model);
  StateDict out;
  for (const PublicTensor& t : public_vit_layout(model->config()))
    if (!t.optional) out.emplace_back(t.key, public_tensor(converter, t));
  return out;
}

ViTConfig config_for_state_dict(ViTConfig config, const StateDict& tensors) {
  for (int64_t b = 0; b < config.depth; ++b)  // the public LoR's values (AttentionSpec::lor_value_slices)
    if (config.attention_spec(b).method == AttentionMethod::LoRTranslution) config.lor_value_slices = true;
  config.position_embedding = false;
  for (const auto& [key, tensor] : tensors)
    if (key == "pos_embedding") config.position_embedding = true;
  return config;
}

void import_public_state_dict(ViT& model, const StateDict& tensors, const std::string& source) {
  const Converter converter(model);
  const std::vector<PublicTensor> layout = public_vit_layout(model->config());
  const std::string family = "public " + public_vit_source(model->config());
  std::map<std::string, at::Tensor> given(tensors.begin(), tensors.end());
  check_keys(layout, given, source, family);
  // Every check before the first write: a bad file leaves the model as it was.
  std::vector<std::pair<const PublicTensor*, at::Tensor>> accepted;
  for (const PublicTensor& t : layout) {
    if (!given.count(t.key)) continue;
    const std::vector<int64_t> expected = public_sizes(converter, t);
    const at::Tensor& value = given.at(t.key);
    if (value.sizes() != at::IntArrayRef(expected))
      throw Error(source + ": '" + t.key + "' has shape " + shape_text(value.sizes()) + ", expected " +
                  shape_text(expected) + " for this config");
    if (!at::isFloatingType(value.scalar_type()))
      throw Error(source + ": '" + t.key + "' holds " + std::string(c10::toString(value.scalar_type())) +
                  ", not floating point");
    const at::Tensor v = value.to(at::kFloat);
    if (!at::isfinite(v).all().item<bool>())
      throw Error(source + ": '" + t.key + "' holds NaN or infinite values");
    const Map map = t.pieces.front().map;
    if (map == Map::RotaryCos || map == Map::RotarySin) {
      if ((v - public_tensor(converter, t)).abs().max().item<double>() > 1e-5)
        throw Error(source + ": '" + t.key + "' is not the rotary table of a " +
                    std::to_string(model->config().grid_height()) + "x" +
                    std::to_string(model->config().grid_width()) +
                    " grid (base 10000) that the engine computes");
      continue;
    }
    accepted.emplace_back(&t, v);
  }
  at::NoGradGuard no_grad;
  for (const auto& [t, value] : accepted) {
    int64_t row = 0;
    for (const PublicPiece& piece : t->pieces) {
      const int64_t rows = converter.public_sizes(piece)[0];
      const at::Tensor target = converter.ours(piece);
      target.copy_(converter.from_public(piece, value.narrow(0, row, rows)).to(target.options()));
      row += rows;
    }
  }
}

}  // namespace translution
