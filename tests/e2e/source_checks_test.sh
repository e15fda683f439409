#!/usr/bin/env bash
# The source checks CI runs (scripts/check_format.sh, scripts/check_layers.sh,
# scripts/lint.sh, scripts/check_doc_links.sh): this tree passes all but the lint (CI
# lints the tree itself), and files broken on purpose in a scratch folder fail all
# four, each named.
set -uo pipefail
source "$(dirname "$0")/harness.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}  # the build whose compile_commands.json scripts/lint.sh reads
format="$root/scripts/check_format.sh" layers="$root/scripts/check_layers.sh" lint="$root/scripts/lint.sh"
command -v clang-format-14 >/dev/null || { echo "clang-format-14 is missing: skipped"; exit 77; }
command -v clang-tidy-14 >/dev/null || { echo "clang-tidy-14 is missing: skipped"; exit 77; }

check "every C++ file in the tree is formatted" bash "$format"
check "the engine's layers hold" bash "$layers"
check "every relative link in the docs names a file" bash "$root/scripts/check_doc_links.sh"
printf '# A page\n\nSee [the results](../ bench / results /) and [the web](https://example.org).\n' \
  >"$work/links.md"
out=$(bash "$root/scripts/check_doc_links.sh" "$work/links.md" 2>&1)
check "a link to no file fails" test $? -ne 0
check "and is named with its line" grep -q "links.md:3: links to ../ bench / results /" <<<"$out"

printf '#include "b.h"\n#include <vector>\nint  f( int x ){return x;}\n' >"$work/unformatted.cpp"
out=$(bash "$format" "$work/unformatted.cpp" 2>&1)
check "an unformatted file fails the format check" test $? -ne 0
check "and is named" grep -q "unformatted.cpp: not formatted" <<<"$out"
bash "$format" --fix "$work/unformatted.cpp"
check "which --fix formats" bash "$format" "$work/unformatted.cpp"
printf '# A page\n\nProse. With [a link](../a/b.md), kept as written.\n' >"$work/page.md"
cp "$work/page.md" "$work/page.md.before"
out=$(bash "$format" --fix "$work/page.md" 2>&1)
check "--fix leaves a file that is not C++ alone" cmp -s "$work/page.md" "$work/page.md.before"
check "and says so" grep -q "page.md: not a C++ source" <<<"$out"

mkdir -p "$work/tree/core/util" "$work/tree/core/cpu" "$work/tree/core/nn" "$work/tree/core/train"
printf '#include "util/error.h"\n' >"$work/tree/core/cpu/ok.cpp"
printf '#include "cpu/linear.h"\n' >"$work/tree/core/nn/ok.cpp"
check "a tree that keeps its layers passes" bash "$layers" "$work/tree"
printf '#include "nn/attention.h"\n' >"$work/tree/core/cpu/up.cpp"
printf 'const float* p = t.data_ptr<float>();\n' >"$work/tree/core/nn/raw.cpp"
printf '#include <QString>\n' >"$work/tree/core/train/qt.cpp"
out=$(bash "$layers" "$work/tree" 2>&1)
check "a tree that breaks them fails" test $? -ne 0
check "cpu including nn is named" grep -q "core/cpu/up.cpp:1: cpu/ may include only" <<<"$out"
check "raw memory in nn is named" grep -q "core/nn/raw.cpp:1: core/nn is the maths" <<<"$out"
check "Qt in the engine is named" grep -q "core/train/qt.cpp:1: the engine never includes Qt" <<<"$out"
cat >"$work/defects.cpp" <<'CPP'
#include <string>
#include <utility>
int size_after(std::string s, int a, int b) {
  a = 1, b = 2;
  std::string t = std::move(s);
  return a + b + int(s.size() + t.size());
}
CPP
out=$(TRANSLUTION_BUILD_DIR="$build" bash "$lint" "$work/defects.cpp" 2>&1)
check "a comma operator and a use after move fail the lint" test $? -ne 0
check "the comma is named" grep -q "defects.cpp:4:8: .*clang-diagnostic-comma" <<<"$out"
check "the use after move is named" grep -q "defects.cpp:6:.*bugprone-use-after-move" <<<"$out"
printf 'int twice(int x) { return 2 * x; }\n' >"$work/clean.cpp"
check "a clean file passes the lint" env TRANSLUTION_BUILD_DIR="$build" bash "$lint" "$work/clean.cpp"
exit $((failures > 0))
