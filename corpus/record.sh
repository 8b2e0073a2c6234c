#!/usr/bin/env bash
# Re-records the corpus: every scenario, or those whose folder names match
# the arguments (shell patterns). Each scenario's record.sh takes the CPU
# lock for its measurements, so this runs them one after another.
set -euo pipefail
cd "$(dirname "$0")"
patterns=("$@")
[ ${#patterns[@]} -gt 0 ] || patterns=('*')
status=0
for p in "${patterns[@]}"; do
	for dir in $p/; do
		dir=${dir%/}
		[ -x "$dir/record.sh" ] || continue
		echo "== $dir"
		"./$dir/record.sh" || { echo "== $dir failed" >&2; status=1; }
	done
done
exit $status
