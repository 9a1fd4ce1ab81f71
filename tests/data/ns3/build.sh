#!/bin/bash
# How the SimAI ns-3 reference binary was built (documentation of the steps run by hand; CI and
# the tests never run this). Nothing is written inside the clustersim repository or under /etc.
#
#   BUILD_DIR=/work/ns3build tests/data/ns3/build.sh
#
# Inputs: bare git mirrors of aliyun/SimAI and aliyun/ns-3-alibabacloud (SIMAI_GIT, NS3_GIT).
# Versions: SimAI 1.6 = f5efb5a9 (its astra-sim-alibabacloud tree pins ns-3-alibabacloud
# c2bfbf4). SimAI 1.7 HEAD needs a SimCCL commit that cannot be retrieved (formats.md §6).
# Tools used: Debian 12, g++ 12.2, cmake 3.25.1, ninja 1.11.1, Python 3.11 (apt-get install cmake
# ninja-build). Took 28 min wall (796 s user CPU, 0.59 GB peak RSS) on 2 shared cores.
set -euo pipefail

BUILD_DIR=${BUILD_DIR:-/work/ns3build}
SIMAI_GIT=${SIMAI_GIT:-/work/.mirror/aliyun+SimAI/repo}
NS3_GIT=${NS3_GIT:-/work/.mirror/aliyun+ns-3-alibabacloud/repo}
SIMAI_COMMIT=f5efb5a9
NS3_COMMIT=c2bfbf4

mkdir -p "$BUILD_DIR"
cd "$BUILD_DIR"

# 1. Check out the two trees. The mirrors lack some large blobs (SimAI's docs images, three LTE
#    fading traces of ns-3), so only the folders needed are exported (git still prints
#    "invalid object" for those blobs; the export succeeds).
rm -rf SimAI ns-3-alibabacloud
git --git-dir="$SIMAI_GIT" archive --prefix=SimAI/ "$SIMAI_COMMIT" \
  astra-sim-alibabacloud scripts example .gitmodules | tar x
git --git-dir="$NS3_GIT" archive --prefix=ns-3-alibabacloud/ "$NS3_COMMIT" -- . \
  ':(exclude)simulation/src/lte/model/fading-traces/*.fad' | tar x

# 2. Stage ns-3 inside SimAI the way SimAI's scripts/build.sh -c ns3 does: ns-3 goes to
#    extern/network_backend/ns3-interface, the ns-3 front end (AstraSimNetwork.cc and its
#    headers) to the ns-3 scratch folder, and the whole astra-sim tree into ns-3's applications
#    module (whose CMakeLists.txt globs astra-sim/system/*.cc, workload/*.cc, ...).
#    (SimAI's script also runs cmake on build/astra_ns3, whose CMakeLists.txt declares no
#    target, and creates /etc/astra-sim/*: both skipped.)
S="$BUILD_DIR/SimAI/astra-sim-alibabacloud"
NI="$S/extern/network_backend/ns3-interface"
rm -rf "$NI"
mkdir -p "$NI"
cp -r ns-3-alibabacloud/* "$NI/"
cp "$S/astra-sim/network_frontend/ns3/AstraSimNetwork.cc" "$S"/astra-sim/network_frontend/ns3/*.h \
  "$NI/simulation/scratch/"
rm -rf "$NI/simulation/src/applications/astra-sim"
cp -r "$S/astra-sim" "$NI/simulation/src/applications/"

# 3. Configure and build ns-3: debug profile (optimized builds segfault at the first collective
#    in RdmaHw::SendPacketComplete under MTP), MTP on, only the modules the front end needs.
cd "$NI/simulation"
CC=gcc CXX=g++ nice -n 19 ./ns3 configure -d debug --enable-mtp \
  --enable-modules="applications;point-to-point;csma;internet;network;core;mtp" -G Ninja
nice -n 19 ./ns3 build -j 2

# The binary: $NI/simulation/build/scratch/ns3.36.1-AstraSimNetwork-debug
ls -l build/scratch/ns3.36.1-AstraSimNetwork-debug
