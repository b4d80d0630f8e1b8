#!/usr/bin/env bash
# Re-measure the seed studies, one after another, each in its own database, resumably.
#
#   bash scripts/study_campaign.sh DIR [SCALE] [STUDY...]
#
# DIR holds one database per study, <study>-<scale>.db (default scale quick, default
# studies: all five, in the order below). A study whose database already holds its run
# is resumed (`dlbench run --resume ID`: only the unfinished trials run), so the script
# can be interrupted and started again at any point without losing a finished trial.
# Each study's stdout/stderr go to DIR/<study>-<scale>.log, its start and end times to
# DIR/campaign.log. Nothing else should run on the machine meanwhile: the studies
# measure time, and a busy core flags (and can spoil) their trials.
#
# STUDY_FLAGS adds flags to each new `dlbench study run` (a resumed run keeps its own),
# e.g. STUDY_FLAGS="--framework torch,tensorflow" for the papers' own two frameworks
# where JAX's compile times would take the campaign past the time it has.
# REDO_BUSY=1 resumes with --redo-busy: every block holding a trial measured on a busy
# machine runs again, whole (the busy attempts stay in the database, retired).
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: study_campaign.sh DIR [SCALE] [STUDY...]}
scale=${2:-quick}
shift $(( $# >= 2 ? 2 : 1 ))
studies=("$@")
[ ${#studies[@]} -gt 0 ] || studies=(sumanjali patel dai florencio germino)
dlbench=${DLBENCH:-.venv/bin/dlbench}
mkdir -p "$dir"
for study in "${studies[@]}"; do
    db="$dir/$study-$scale.db"
    log="$dir/$study-$scale.log"
    echo "$(date -u +%FT%TZ) start $study $scale" >>"$dir/campaign.log"
    run_id=""
    if [ -f "$db" ]; then
        run_id=$(.venv/bin/python - "$db" <<'EOF'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
row = con.execute("select max(id) from runs").fetchone()
print(row[0] if row and row[0] is not None else "")
EOF
)
    fi
    if [ -n "$run_id" ]; then
        redo=()
        [ -n "${REDO_BUSY:-}" ] && redo=(--redo-busy)
        "$dlbench" run --resume "$run_id" "${redo[@]}" --db "$db" >>"$log" 2>&1
    else
        # shellcheck disable=SC2086 # STUDY_FLAGS is a list of flags, split on purpose
        "$dlbench" study run "$study" --scale "$scale" ${STUDY_FLAGS:-} --db "$db" >>"$log" 2>&1
    fi
    echo "$(date -u +%FT%TZ) end $study $scale exit $?" >>"$dir/campaign.log"
done
