#!/usr/bin/env bash
# scripts/check_commit_messages.sh against a scratch history: well-formed commits pass, and each rule
# broken on purpose (a long subject, no blank line, a work-log word) fails and is named.
set -uo pipefail
source "$(dirname "$0")/harness.sh"
script="$(dirname "$0")/../../scripts/check_commit_messages.sh"
command -v git >/dev/null || { echo "git is missing: skipped"; exit 77; }

repo=$work/repo
git init -q "$repo"
commit() { git -C "$repo" -c user.name=test -c user.email=test@example.org commit -q --allow-empty -m "$1"; }
s_word=session i_word=issue  # the words the rule refuses before a number, kept apart from their numbers here
commit "The starting commit, whatever it says, is not checked: $s_word 1, $i_word 2, $(printf 'x%.0s' {1..80})"
base=$(git -C "$repo" rev-parse HEAD)
commit "$(printf 'A short subject\n\nA body that explains.')"
commit "Another short subject"
check "well-formed commits pass" bash "$script" --repo "$repo" "$base"

commit "$(printf 'A subject far too long for a log line, which the rule limits to seventy-two characters')"
out=$(bash "$script" --repo "$repo" "$base" 2>&1)
check "a long subject fails" test $? -ne 0
check "and is named" grep -q "subject of 86 characters" <<<"$out"

git -C "$repo" reset -q --hard HEAD~1
commit "$(printf 'Subject\nbody straight after it')"
out=$(bash "$script" --repo "$repo" "$base" 2>&1)
check "a missing blank line fails" grep -q "no blank line after the subject" <<<"$out"

git -C "$repo" reset -q --hard HEAD~1
commit "$(printf 'Fix the sweep\n\nAs planned in %s 4.' "$s_word")"
out=$(bash "$script" --repo "$repo" "$base" 2>&1)
check "a work-log word fails" grep -q "names a session or issue number" <<<"$out"

check "a folder without history passes" bash "$script" --repo "$work" "$base"
[ $failures -eq 0 ] || { echo "$failures checks failed"; exit 1; }
echo "all checks passed"
