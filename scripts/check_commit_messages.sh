#!/usr/bin/env bash
# Checks the messages of the commits after a starting commit (the history before it stays as it is):
# a subject of at most 72 characters, a blank line between subject and body, and no work-log words
# (a session's or an issue's number): the project speaks of itself only.
#   scripts/check_commit_messages.sh [--repo DIR] [BASE]   (BASE: the first commit not checked)
# Exits 1 naming every commit at fault; 0 when all pass, or when there is no git history to read.
set -euo pipefail
repo=.
base=d443e03  # the last commit before the check began
while [ $# -gt 0 ]; do
  case $1 in
    --repo) repo=$2; shift 2 ;;
    *) base=$1; shift ;;
  esac
done
cd "$repo"
if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "commit messages: not a git checkout, nothing to check"
  exit 0
fi
# A shallow clone may not hold BASE: then every commit it holds is newer and is checked.
if git cat-file -e "$base^{commit}" 2>/dev/null; then range="$base..HEAD"; else range=HEAD; fi
faults=0
checked=0
for commit in $(git rev-list "$range"); do
  checked=$((checked + 1))
  subject=$(git log -1 --format=%s "$commit")
  second=$(git log -1 --format=%B "$commit" | sed -n 2p)
  why=()
  [ ${#subject} -le 72 ] || why+=("subject of ${#subject} characters (at most 72)")
  [ -z "$second" ] || why+=("no blank line after the subject")
  if git log -1 --format=%B "$commit" | grep -qiE '\b(session|issue)s? #?[0-9]+'; then
    why+=("names a session or issue number")
  fi
  if [ ${#why[@]} -gt 0 ]; then
    faults=$((faults + 1))
    printf 'commit %s "%.50s": %s\n' "$(git rev-parse --short "$commit")" "$subject" "$(IFS=';'; echo "${why[*]}")"
  fi
done
if [ $faults -gt 0 ]; then
  echo "commit messages: $faults of $checked commits after $base break the rules above" >&2
  exit 1
fi
echo "commit messages: $checked commits after $base, all well formed"
