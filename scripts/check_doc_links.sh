#!/usr/bin/env bash
# Fails, naming each, where a relative link in the README or docs/ names no file in
# the tree (a moved file, a typo, a page mangled by a tool). Web links and anchors are
# not followed.
# Usage: scripts/check_doc_links.sh [page.md...]   (default: README.md and docs/*.md)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ $# -eq 0 ]; then
  cd "$root"
  pages=(README.md docs/*.md)
else
  pages=("$@")
fi
bad=0
for page in "${pages[@]}"; do
  dir=$(dirname "$page")
  while IFS=: read -r line target; do
    target=${target#](} target=${target%)} target=${target%% \"*} target=${target%%#*}  # no title, no anchor
    case $target in http://* | https://* | mailto:* | '') continue ;; esac
    if [ ! -e "$dir/$target" ]; then
      echo "$page:$line: links to $target, which does not exist"
      bad=1
    fi
  done < <(grep -noE '\]\([^)]+\)' "$page")
done
exit $bad
