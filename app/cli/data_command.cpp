// `translution data fetch|info|render`
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_line.h"
#include "data/canvas_dataset.h"
#include "data/mnist.h"
#include "data/mnist_provision.h"
#include "image/contact_sheet.h"
#include "image/png_io.h"
#include "util/error.h"
#include "util/output_path.h"

namespace translution::cli {
namespace {

struct DataOptions {
  std::string dir = default_mnist_dir();
  bool json = false;
  std::string dataset, split, out, grid;
  int64_t index = 0, canvas = 0, seed = 0;
};

int fetch(const DataOptions& o) {
  fetch_mnist(o.dir, [](const std::string& line) { std::cout << line << std::endl; });
  return 0;
}

// Each file's size and checksum, then the counts where every file parsed.
void print_report(const std::string& dir, const std::vector<MnistFileStatus>& statuses,
                  const int64_t counts[2]) {
  std::cout << "MNIST data directory: " << dir << "\n";
  for (const auto& s : statuses) {
    std::cout << "  " << std::left << std::setw(26) << s.spec.name << std::right << std::setw(10) << s.size
              << " bytes  " << (s.ok() ? "md5 " + s.md5 + " ok" : s.problem()) << "\n";
  }
  if (counts[0] >= 0 && counts[1] >= 0) {
    std::cout << "train: " << counts[0] << " images, test: " << counts[1] << " images\n";
    std::cout << "all four files present, checksums pass\n";
  }
}

int info(const DataOptions& o) {
  const std::string& dir = o.dir;
  const auto statuses = check_mnist_dir(dir);
  bool all_ok = true;
  int good = 0;
  for (const auto& s : statuses) {
    all_ok = all_ok && s.ok();
    good += s.ok();
  }
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
  if (o.json) {
    nlohmann::ordered_json files = nlohmann::ordered_json::array();
    for (const auto& f : statuses)
      files.push_back({{"name", f.spec.name}, {"size", f.size}, {"md5", f.md5}, {"ok", f.ok()}});
    const nlohmann::ordered_json out = {
        {"dir", dir}, {"ok", all_ok}, {"train", counts[0]}, {"test", counts[1]}, {"files", files}};
    std::cout << json_line(out) << std::endl;
  } else {
    print_report(dir, statuses, counts);
  }
  // The report is the output; what is wrong with the folder is the error line.
  if (!load_error.empty())
    std::cerr << "error: " << printable(load_error) << "\n";
  else if (!all_ok)
    std::cerr << "error: " << printable(dir) << ": MNIST is missing or damaged there (" << good << " of "
              << statuses.size() << " files good): `translution data fetch --data-dir DIR` fetches it\n";
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

int render(const DataOptions& o) {
  CanvasSpec spec;
  spec.kind = parse_canvas_kind(o.dataset);
  spec.canvas = o.canvas;
  spec.seed = uint64_t(o.seed);
  const Split split = parse_split(o.split);
  const int64_t index = o.index;
  const std::string& out = o.out;
  checked_output_path(out);
  refuse_inputs_as_outputs(mnist_paths(o.dir), {out});
  CanvasDataset dataset(load_mnist(o.dir, split), split, spec);
  int64_t rows = 1, cols = 1;
  if (!o.grid.empty()) std::tie(rows, cols) = parse_grid(o.grid);
  const int64_t count = rows * cols, available = int64_t(*dataset.size());
  if (index < 0 || index + count > available)
    throw Error("--index " + std::to_string(index) + " with " + std::to_string(count) +
                " samples is out of range: the " + split_name(split) + " split has " +
                std::to_string(available));
  std::vector<at::Tensor> images;
  for (int64_t i = index; i < index + count; ++i) images.push_back(dataset.canvas(i));
  write_png_gray(out, !o.grid.empty() ? contact_sheet(images, rows, cols) : images[0]);
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

void add_data_command(CLI::App& root, Runners& runners) {
  CLI::App* data = root.add_subcommand("data", "the MNIST digits: fetch, info, render");
  auto o = std::make_shared<DataOptions>();
  auto add_dir = [&o](CLI::App* sub) {
    sub->add_option("--data-dir", o->dir, "MNIST folder ($TRANSLUTION_DATA, else data/mnist)");
  };
  CLI::App* fetch_app = data->add_subcommand("fetch", "provision the four MNIST files");
  add_dir(fetch_app);
  runners[fetch_app] = [o] { return fetch(*o); };
  CLI::App* info_app = data->add_subcommand("info", "where MNIST is, counts, whether checksums pass");
  add_dir(info_app);
  info_app->add_flag("--json", o->json, "print one JSON object");
  runners[info_app] = [o] { return info(*o); };
  CLI::App* render_app = data->add_subcommand("render", "write a sample (or a grid of samples) as a PNG");
  add_dir(render_app);
  add_choice(*render_app, "--dataset", o->dataset, {"mnist", "static", "dynamic", "moving"}, "canvas kind")
      ->required();
  add_choice(*render_app, "--split", o->split, {"train", "test"}, "which split")->required();
  render_app->add_option("--index", o->index, "first sample")->capture_default_str();
  render_app->add_option("--out", o->out, "PNG to write")->required();
  render_app->add_option("--grid", o->grid, "a contact sheet of ROWSxCOLS samples from --index")
      ->type_name("RxC");
  render_app->add_option("--canvas", o->canvas, "canvas size (0: the dataset's)")
      ->check(in_range("--canvas", 0, 1024));
  render_app->add_option("--seed", o->seed, "placement seed")->check(at_least("--seed", 0));
  runners[render_app] = [o] { return render(*o); };
}

}  // namespace translution::cli
