#pragma once
// The digit canvas: an S x S grey image (84 x 84 by default) shown magnified,
// with the ViT patch grid drawn over it. Draw, erase, drag to move, nudge with
// the arrow keys, undo. Emits the image as a tensor whenever it changes. While
// drawing, a dashed guide shows the size MNIST's digits have (a 20 x 20 box in
// a 28 x 28 frame), the size every model here was trained on.
#include <vector>

#include <QImage>
#include <QRect>
#include <QString>
#include <QVector>
#include <QWidget>

#include "tensor_metatype.h"

namespace translution::ui {

// What the canvas shows: a test digit (its label and where it came from), a picture,
// or a drawing. It travels with the pixels through undo and moves; a stroke, an
// erasure or Clear makes the canvas a drawing of unknown class.
struct CanvasOrigin {
  int label = -1;       // the true class when known, else -1
  QString description;  // e.g. "test #3343 (label 8, dynamic)" or a file name; empty for a drawing
  bool operator==(const CanvasOrigin& o) const { return label == o.label && description == o.description; }
};

class DigitCanvas : public QWidget {
  Q_OBJECT
 public:
  // How a change enters the undo history: Push adds an entry; Continue joins the change
  // before it when that was a Continue too, so a slide of many frames undoes in one step,
  // as a drag does.
  enum class UndoStep { Push, Continue };

  // Query: a left click picks the patch under it as the attention view's query token.
  enum class Tool { Draw, Erase, Move, Query };

  explicit DigitCanvas(int canvas_size = 84, QWidget* parent = nullptr);

  int canvasSize() const { return size_; }
  int patchSize() const { return patch_; }
  bool gridVisible() const { return grid_visible_; }
  double brushRadius() const { return brush_radius_; }
  Tool tool() const { return tool_; }
  bool canUndo() const { return !undo_.empty(); }

  // [S, S] float in [0, 1], 0 = background (a copy).
  at::Tensor pixels() const;
  const CanvasOrigin& origin() const { return origin_; }
  bool isEmpty() const { return inkBox().isEmpty(); }
  // The drawing surface's magnified square, in widget pixels.
  QRectF canvasRect() const;
  // Canvas positions marked on the canvas (e.g. where a digit's centre lies at whole-patch
  // shifts), and the one current position drawn stronger; an empty list clears them.
  const QVector<QPointF>& positionMarks() const { return marks_; }
  const QImage& overlay() const { return overlay_; }  // null when there is none
  // Centre of ink mass in canvas pixels; (-1, -1) for an empty canvas.
  QPointF massCentre() const;
  // Bounding box of the ink in canvas pixels (empty for an empty canvas).
  QRect inkBox() const;
  // Where the size guide is drawn: MNIST's 20 x 20 box, centred on the ink (or the canvas).
  QRectF guideBox() const;
  bool guideVisible() const { return tool_ == Tool::Draw; }
  // Canvas pixel under a widget position (may lie outside the canvas).
  QPointF toCanvas(const QPointF& widget_pos) const;
  // Widget-pixels per canvas-pixel.
  double scale() const;

  QSize sizeHint() const override { return {size_ * 6, size_ * 6}; }
  // Drawing needs room: below about 280 px a stroke's width and the patch grid blur together.
  QSize minimumSizeHint() const override { return {280, 280}; }

 public Q_SLOTS:
  // [S, S] in [0, 1]; undoable. The origin says what the pixels are (default: a drawing).
  void setPixels(const at::Tensor& pixels, const translution::ui::CanvasOrigin& origin = {},
                 translution::ui::DigitCanvas::UndoStep step = UndoStep::Push);
  void clear();
  void undo();
  void nudge(int dx, int dy);  // moves the ink by whole pixels, staying inside
  void setTool(translution::ui::DigitCanvas::Tool tool);
  void setPatchSize(int patch);
  void setGridVisible(bool visible);
  void setBrushRadius(double radius);
  // Outlines patch (row, col) (the attention query) while the Query tool is on; row < 0 clears it.
  void setHighlightedPatch(int row, int col);
  void setPositionMarks(const QVector<QPointF>& marks, int current = -1);
  // An S x S picture (with alpha) drawn over the pixels, under the grid: e.g. an attribution
  // map. It stays until cleared or replaced; editing the canvas does not touch it.
  void setOverlay(const QImage& overlay);
  void clearOverlay();

 Q_SIGNALS:
  void canvasChanged(const at::Tensor& pixels);
  void undoAvailable(bool available);
  void patchClicked(int row, int col);  // Query tool
  void inkEdited();                     // a stroke or erasure began, or the canvas was cleared (not a move)
  void originChanged(const translution::ui::CanvasOrigin& origin);  // emitted before canvasChanged

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

 private:
  struct State {
    std::vector<float> pixels;
    CanvasOrigin origin;
  };
  void paintGuide(class QPainter& painter, const QRectF& canvas);
  void stamp(const QPointF& at, bool erase);
  void strokeTo(const QPointF& to, bool erase);
  // Shift of `base` by (dx, dy) clamped so that no ink leaves the canvas.
  std::vector<float> shifted(const std::vector<float>& base, int dx, int dy) const;
  void paintMarks(class QPainter& painter, const QRectF& canvas);
  void pushUndo();
  void setOrigin(const CanvasOrigin& origin);
  void changed();

  int size_;
  int patch_ = 12;
  bool grid_visible_ = true;
  double brush_radius_ = 2.0;
  Tool tool_ = Tool::Draw;
  int highlight_row_ = -1, highlight_col_ = -1;
  std::vector<float> pixels_;
  CanvasOrigin origin_;
  std::vector<State> undo_;
  QVector<QPointF> marks_;
  QImage overlay_;
  int current_mark_ = -1;
  bool continuing_ = false;  // the last change was an UndoStep::Continue

  // Gesture in progress.
  bool stroking_ = false;
  bool erasing_ = false;
  QPointF last_point_;
  std::vector<float> drag_base_;
  QPointF drag_start_;
};

}  // namespace translution::ui
