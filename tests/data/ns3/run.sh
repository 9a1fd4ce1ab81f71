#!/bin/bash
# Run one SimAI ns-3 reference scenario by hand (documentation; never run by CI or tests).
#
#   tests/data/ns3/run.sh <scenario>
#
# Copies tests/data/ns3/<scenario>/{topology,SimAI.conf,workload.txt,flow.txt,trace.txt} into a
# scratch run folder outside the repository, runs SimAI's ns-3 binary there (it writes
# ncclFlowModel_* into its working directory and the FCT/PFC files named in SimAI.conf, which
# are relative paths), then copies back the outputs we keep and writes run.txt (command,
# environment, commits, wall time, peak RSS).
set -euo pipefail

SCN=${1:?usage: run.sh <scenario>}
HERE=$(dirname "$(realpath "$0")")
SRC="$HERE/$SCN"
NS3_SIM=${NS3_SIM:-/work/ns3build/SimAI/astra-sim-alibabacloud/extern/network_backend/ns3-interface/simulation}
BIN="$NS3_SIM/build/scratch/ns3.36.1-AstraSimNetwork-debug"
RUN_ROOT=${RUN_ROOT:-/work/ns3build/runs}
RUN="$RUN_ROOT/$SCN"

TOPO=$(cd "$SRC" && ls | grep -v -E '^(SimAI\.conf|workload\.txt|flow\.txt|trace\.txt|fct\.txt|pfc\.txt|ncclFlowModel_.*|run\.txt|run-failed.*|.*\.gz)$')
rm -rf "$RUN"
mkdir -p "$RUN"
cp "$SRC/$TOPO" "$SRC/SimAI.conf" "$SRC/workload.txt" "$SRC/flow.txt" "$SRC/trace.txt" "$RUN/"
cd "$RUN"

# Environment (formats.md §7): AS_SEND_LAT is in µs per flow; NVLS and PXN off; log level ERROR
# (SimAI's log goes to /etc/astra-sim/SimAI.log, which does not exist here, so nothing is written).
export AS_SEND_LAT=3 AS_NVLS_ENABLE=0 AS_PXN_ENABLE=0 AS_LOG_LEVEL=3
# NS3_LIB: a folder with a rebuilt libns3.36.1-point-to-point-debug.so to run with instead of the
# build's (build_hpcc_fix.sh makes the one HPCC needs); recorded in run.txt.
if [ -n "${NS3_LIB:-}" ]; then
  export LD_LIBRARY_PATH="$NS3_LIB"
fi
CMD=("$BIN" -t 1 -w workload.txt -n "$TOPO" -c SimAI.conf)

start=$(date +%s.%N)
set +e
/usr/bin/time -v -o time.txt timeout -s KILL "${TIMEOUT:-720}" nice -n 19 "${CMD[@]}" >stdout.txt 2>stderr.txt
rc=$?
set -e
end=$(date +%s.%N)

{
  echo "scenario: $SCN"
  echo "cwd: run folder holding copies of the scenario inputs"
  echo "env: AS_SEND_LAT=$AS_SEND_LAT AS_NVLS_ENABLE=$AS_NVLS_ENABLE AS_PXN_ENABLE=$AS_PXN_ENABLE AS_LOG_LEVEL=$AS_LOG_LEVEL"
  echo "command: nice -n 19 ns3.36.1-AstraSimNetwork-debug -t 1 -w workload.txt -n $TOPO -c SimAI.conf"
  echo "binary: SimAI f5efb5a9 (1.6) + ns-3-alibabacloud c2bfbf4, ./ns3 configure -d debug --enable-mtp (tests/data/ns3/build.sh)"
  if [ -n "${NS3_LIB:-}" ]; then
    echo "library: libns3.36.1-point-to-point-debug.so from $NS3_LIB (tests/data/ns3/build_hpcc_fix.sh: HPCC's INT offset fixed)"
  fi
  echo "exit status: $rc (137 = killed by the ${TIMEOUT:-720} s limit)"
  printf 'wall seconds: %.1f\n' "$(echo "$end - $start" | bc)"
  echo "max RSS kB: $(grep 'Maximum resident set size' time.txt | awk '{print $NF}')"
  echo "user seconds: $(grep 'User time' time.txt | awk '{print $NF}')"
  echo "host: $(nproc) cores, $(uname -m), load average at end $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >run.txt

if [ "$rc" -ne 0 ]; then
  # A failed run keeps only its record (the tests read scenarios that have run.txt).
  cp run.txt "$SRC/run-failed.txt"
  tail -n 20 stderr.txt >"$SRC/run-failed-stderr.txt"
  cat run.txt
  exit $rc
fi
for f in ncclFlowModel_EndToEnd.csv fct.txt pfc.txt run.txt; do
  if [ -f "$f" ]; then
    sz=$(stat -c %s "$f")
    if [ "$sz" -gt 2000000 ]; then
      gzip -9 -c "$f" >"$SRC/$f.gz"
    else
      cp "$f" "$SRC/$f"
    fi
  fi
done
cat run.txt
exit $rc
