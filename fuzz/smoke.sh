#!/usr/bin/env bash
# A smoke run of every fuzz target: SECONDS (default 10) each, from the
# committed seeds, new inputs into a scratch directory (the seeds stay as they
# are). Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`);
# the first run builds the targets (several minutes). Exits non-zero on the
# first crash, leaving the input in fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-10}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# Lowering leaks each operator's table on purpose, and the runtime its operators (they live for the program).
export ASAN_OPTIONS=detect_leaks=0
for target in schema_parser yaml_prescan yaml_pipeline argparse boxed_call functionalize_diff saved_graph; do
    mkdir -p "$scratch/$target"
    echo "== $target (${seconds}s)"
    cargo +nightly fuzz run "$target" "$scratch/$target" "corpus/$target" -- \
        -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 2>&1 |
        grep -E '^(stat::number_of_executed_units|==[0-9]+==|thread .* panicked|SUMMARY)' || true
    test "${PIPESTATUS[0]}" -eq 0
done
