#pragma once
// QCustomPlot's header uses Qt's `signals`/`slots`/`emit`/`foreach` keywords, which this
// project turns off (QT_NO_KEYWORDS) because LibTorch uses those words as
// identifiers. Define them for this one header only.
#define signals Q_SIGNALS
#define slots Q_SLOTS
#define emit Q_EMIT
#define foreach Q_FOREACH
#include <qcustomplot.h>
#undef signals
#undef slots
#undef emit
#undef foreach
