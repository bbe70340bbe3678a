#!/usr/bin/env bash
# Mutation testing of lib's core mathematics (make mutation; not part of make test).
#
# For each module M of MODULES, mutmut (pinned in requirements-test.txt) mutates lib/M.py only and
# runs tests/test_M.py only, in a scratch copy of lib/ and that one test file under
# .cache/mutation/M (so the work tree is never edited and one module takes minutes, not the whole
# suite per mutant). Hypothesis runs derandomized (profile "ci") so a rerun draws the same examples
# and a score does not move with the random draw; torch runs one thread per mutant (mutmut forks
# one child per mutant, and a forked OpenMP pool is unsafe). Results: .cache/mutation/M/results.txt
# (every mutant and its status); the recorded scores and the survivors are in docs/mutation.md.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MUTMUT="$ROOT/.venv/bin/mutmut"
MODULES="${MODULES:-rope rope_scaling alibi sinusoidal mrope relative position_ids}"
JOBS="${JOBS:-2}"

for m in $MODULES; do
    if [[ ! -f "$ROOT/lib/$m.py" || ! -f "$ROOT/tests/test_$m.py" ]]; then
        echo "mutation: lib/$m.py or tests/test_$m.py does not exist" >&2
        exit 2
    fi
    work="$ROOT/.cache/mutation/$m"
    rm -rf "$work"
    mkdir -p "$work/tests"
    cp -r "$ROOT/lib" "$work/lib"
    find "$work/lib" -name __pycache__ -prune -exec rm -rf {} +
    cp "$ROOT/tests/conftest.py" "$ROOT/tests/test_$m.py" "$work/tests/"
    cp "$ROOT/pyproject.toml" "$work/"  # pytest's options; it has no [tool.mutmut]: setup.cfg below
    cat >"$work/setup.cfg" <<CFG
[mutmut]
source_paths = lib
only_mutate = lib/$m.py
pytest_add_cli_args_test_selection = tests/test_$m.py
pytest_add_cli_args = -p no:cacheprovider -q -x
CFG
    start=$(date +%s)
    (
        cd "$work"
        HYPOTHESIS_PROFILE=ci OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONHASHSEED=0 \
            HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
            nice -n 10 "$MUTMUT" run --max-children "$JOBS" >run.log 2>&1 || {
            tail -30 run.log >&2
            exit 1
        }
        "$MUTMUT" results --all true >results.txt
    )
    secs=$(($(date +%s) - start))
    total=$(grep -c ': ' "$work/results.txt" || true)
    killed=$(grep -c ': killed' "$work/results.txt" || true)
    survived=$(grep -c ': survived' "$work/results.txt" || true)
    echo "lib/$m.py: $killed of $total mutants killed, $survived survived ($secs s);" \
        "every mutant and its status in .cache/mutation/$m/results.txt"
    grep -v ': killed' "$work/results.txt" || true
done
