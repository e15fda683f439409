// `translution data fetch|info|render`
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/args.h"
#include "cli/commands.h"
#include "data/canvas_dataset.h"
#include "data/mnist.h"
#include "data/mnist_provision.h"
#include "image/contact_sheet.h"
#include "image/png_io.h"
#include "util/error.h"

namespace translution::cli {
namespace {

const char* kDataUsage = R"(usage:
  translution data fetch  [--data-dir DIR]
  translution data info   [--data-dir DIR] [--json]
  translution data render --dataset mnist|static|dynamic|moving --split train|test --index I
                          --out FILE.png [--grid RxC] [--canvas S] [--seed N] [--data-dir DIR]

DIR defaults to $TRANSLUTION_DATA, else data/mnist in the source tree.
--grid 8x8 writes a contact sheet of samples I, I+1, ... row by row.
)";

std::string data_dir(const Args& args) { return args.get("data-dir", default_mnist_dir()); }

int fetch(const Args& args) {
  fetch_mnist(data_dir(args), [](const std::string& line) { std::cout << line << std::endl; });
  return 0;
}

int info(const Args& args) {
  const std::string dir = data_dir(args);
  const auto statuses = check_mnist_dir(dir);
  bool all_ok = true;
  for (const auto& s : statuses) all_ok = all_ok && s.ok();
  // Counts come from parsing the files, so they also prove the IDX structure is sound.
  int64_t counts[2] = {-1, -1};
  std::string load_error;
  if (all_ok) {
    try {
      counts[0] = load_mnist(dir, Split::Train).size();
      counts[1] = load_mnist(dir, Split::Test).size();
    } catch (const Error& e) {
      load_error = e.what();
      all_ok = false;
    }
  }
  if (args.flag("json")) {
    std::ostringstream out;
    out << "{\"dir\":\"" << dir << "\",\"ok\":" << (all_ok ? "true" : "false") << ",\"train\":" << counts[0]
        << ",\"test\":" << counts[1] << ",\"files\":[";
    for (size_t i = 0; i < statuses.size(); ++i) {
      const auto& s = statuses[i];
      out << (i ? "," : "") << "{\"name\":\"" << s.spec.name << "\",\"size\":" << s.size << ",\"md5\":\""
          << s.md5 << "\",\"ok\":" << (s.ok() ? "true" : "false") << "}";
    }
    out << "]}";
    std::cout << out.str() << std::endl;
    return all_ok ? 0 : 1;
  }
  std::cout << "MNIST data directory: " << dir << "\n";
  for (const auto& s : statuses) {
    std::cout << "  " << std::left << std::setw(26) << s.spec.name << std::right << std::setw(10) << s.size
              << " bytes  " << (s.ok() ? "md5 " + s.md5 + " ok" : s.problem()) << "\n";
  }
  if (all_ok) {
    std::cout << "train: " << counts[0] << " images, test: " << counts[1] << " images\n";
    std::cout << "all four files present, checksums pass\n";
  } else if (!load_error.empty()) {
    std::cout << "error: " << load_error << "\n";
  } else {
    std::cout << "MNIST is incomplete: run `translution data fetch`\n";
  }
  return all_ok ? 0 : 1;
}

std::pair<int64_t, int64_t> parse_grid(const std::string& text) {
  int rows = 0, cols = 0;
  char x = 0, extra = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c", &rows, &x, &cols, &extra) != 3 || (x != 'x' && x != 'X') ||
      rows < 1 || cols < 1 || rows > 64 || cols > 64)
    throw Error("--grid expects ROWSxCOLS with 1..64 each (like 8x8), got '" + text + "'");
  return {rows, cols};
}

int render(const Args& args) {
  CanvasSpec spec;
  spec.kind = parse_canvas_kind(args.require("dataset"));
  spec.canvas = args.get_int("canvas", 0);
  spec.seed = uint64_t(args.get_int("seed", 0));
  const Split split = parse_split(args.require("split"));
  const int64_t index = args.get_int("index", 0);
  const std::string out = args.require("out");
  CanvasDataset dataset(load_mnist(data_dir(args), split), split, spec);
  int64_t rows = 1, cols = 1;
  if (args.has("grid")) std::tie(rows, cols) = parse_grid(args.get("grid"));
  const int64_t count = rows * cols, available = int64_t(*dataset.size());
  if (index < 0 || index + count > available)
    throw Error("--index " + std::to_string(index) + " with " + std::to_string(count) +
                " samples is out of range: the " + split_name(split) + " split has " + std::to_string(available));
  std::vector<at::Tensor> images;
  for (int64_t i = index; i < index + count; ++i) images.push_back(dataset.canvas(i));
  write_png_gray(out, args.has("grid") ? contact_sheet(images, rows, cols) : images[0]);
  std::cout << "wrote " << out << " (" << canvas_kind_name(spec.kind) << ", " << split_name(split);
  if (count == 1) {
    const Placement p = dataset.placement(index);
    std::cout << ", index " << index << ", label " << dataset.label(index) << ", digit at x=" << p.x
              << " y=" << p.y;
  } else {
    std::cout << ", indices " << index << ".." << index + count - 1;
  }
  std::cout << ", " << dataset.canvas_size() << "x" << dataset.canvas_size() << " canvas)\n";
  return 0;
}

}  // namespace

int data_command(const std::vector<std::string>& words) {
  if (const auto status = usage_exit(words, kDataUsage)) return *status;
  const std::string sub = words[0];
  const std::vector<std::string> rest(words.begin() + 1, words.end());
  if (sub == "fetch") return fetch(Args(rest, {}, {"data-dir"}));
  if (sub == "info") return info(Args(rest, {"json"}, {"data-dir"}));
  if (sub == "render")
    return render(Args(rest, {}, {"data-dir", "dataset", "split", "index", "out", "grid", "canvas", "seed"}));
  throw Error("unknown data command '" + sub + "' (expected fetch, info or render)");
}

}  // namespace translution::cli
