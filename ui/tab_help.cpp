#include "tab_help.h"

#include <QObject>

namespace translution::ui {

QString tab_help_title(StudioTab tab) {
  switch (tab) {
    case StudioTab::Compare: return QObject::tr("Compare");
    case StudioTab::Attention: return QObject::tr("Attention");
    case StudioTab::Offsets: return QObject::tr("Offset weights");
    case StudioTab::Training: return QObject::tr("Training");
    case StudioTab::Robustness: return QObject::tr("Robustness");
    case StudioTab::Attribution: return QObject::tr("Attribution");
  }
  return {};
}

QString tab_help_text(StudioTab tab) {
  switch (tab) {
    case StudioTab::Compare:
      return QObject::tr(
          "<p>Each slot is one model reading the canvas. The bars are its probabilities for the ten digits, "
          "recomputed on every stroke or move.</p><p>Translution gives every offset between two patches its "
          "own "
          "query, key and value projection, so it knows <i>where</i> a patch is relative to another; "
          "self-attention with an absolute position embedding knows where each patch is on the canvas. Drag "
          "the "
          "digit (Move, or the arrow keys) and watch which model keeps its answer.</p>");
    case StudioTab::Attention:
      return QObject::tr(
          "<p>Where one query patch looks, for the chosen slot, layer and head: the brighter a patch, the "
          "more of "
          "its value the query takes. Pick the query with the Query tool on the canvas, or the CLS token, "
          "which "
          "the classifier reads.</p><p>The rollout multiplies the layers' attention (with the residual path) "
          "to "
          "show what reaches the CLS token through the whole network; the N x N matrix shows every query's "
          "row, its colours on a log scale (most weights sit near 1/N); "
          "the mean distance says how far each head looks.</p>");
    case StudioTab::Offsets:
      return QObject::tr(
          "<p>Translution learns one matrix W<sub>&delta;</sub> per relative offset &delta; between two "
          "patches. "
          "Each map places the offsets on a grid, (0, 0) in the middle, and colours each by the size "
          "(Frobenius "
          "norm) of its matrix for q, k or v: a bright ring or band says which neighbours the layer "
          "weighs.</p>"
          "<p>\"Contributions on this canvas\" uses the digit on the canvas instead: how much each offset's "
          "value "
          "matrix carried into the layer's output for this input, summed over the pairs at that offset.</p>");
    case StudioTab::Training:
      return QObject::tr(
          "<p>Trains a small model here, on this machine, with live loss and accuracy curves. Choose an "
          "operator, a preset, a dataset (static: centred digits; dynamic: anywhere on the canvas) and a "
          "budget. "
          "Pause, resume or stop at any time, save a checkpoint, or send the model to a slot to compare "
          "it.</p>");
    case StudioTab::Robustness:
      return QObject::tr(
          "<p>The papers' experiment: models trained only on centred digits, tested on moved ones.</p><p>"
          "<b>Move</b> slides the digit along a path and plots each slot's probability of the true class. "
          "<b>Sweep</b> places test digits at every canvas position and maps the accuracy. <b>Protocol</b> "
          "trains or evaluates pairs of models: Static&rarr;Static, Dynamic&rarr;Dynamic and "
          "Static&rarr;Dynamic (trained centred, tested anywhere).</p>");
    case StudioTab::Attribution:
      return QObject::tr(
          "<p>Which pixels a slot's answer rests on. Red pixels raise the chosen class's logit, blue ones "
          "lower "
          "it; white, nothing. Both methods compare the digit with the black canvas.</p><p><b>Integrated "
          "gradients</b> walks from the black canvas to the digit and adds up each pixel's gradient on the "
          "way: "
          "the map sums to the logit's rise (the gap says how nearly; more steps close it). <b>Occlusion</b> "
          "blacks out one tile at a time, a patch or 4 x 4 pixels, and colours the tile by how much the "
          "logit "
          "falls. <i>Show on canvas</i> lays the map over the digit while you draw.</p>");
  }
  return {};
}

QString about_text() {
  return QObject::tr(
      "<p><b>Translution Studio</b>: draw or drag an MNIST digit and watch what Translution, LoR-Translution "
      "and "
      "self-attention ViTs predict, where they attend and how large their per-offset weights are; train "
      "small "
      "models and test them on moved digits.</p><p>The papers:</p><ul>"
      "<li>Hehe Fan, Yi Yang, Fei Wu. <i>Translution: Unifying Transformer and Convolution for Adaptive and "
      "Relative Modeling.</i> Preprints.org, 2025. "
      "<a "
      "href=\"https://doi.org/10.20944/preprints202505.0597.v1\">doi:10.20944/preprints202505.0597.v1</a></"
      "li>"
      "<li><i>Translution: Unifying Self-Attention and Convolution for Adaptive and Relative Modeling.</i> "
      "ICLR "
      "2026 submission. <a href=\"https://openreview.net/forum?id=gigh6VJS4u\">OpenReview</a></li>"
      "<li>Richard E. Turner. <i>An Introduction to Transformers.</i> 2023. "
      "<a href=\"https://arxiv.org/abs/2304.10557\">arXiv:2304.10557</a></li></ul>");
}

}  // namespace translution::ui
