#!/bin/sh
# Open MPI's launch agent for scripts/emulated_cluster.sh: called as `netns_agent.sh HOST COMMAND…`
# where ssh would be, it runs COMMAND inside the namespace of host address 10.77.0.I (cs-emu-hI).
host="$1"
shift
case "$host" in
    10.77.0.*) i="${host##*.}" ;;
    *) echo "netns_agent: $host is not a host of the emulated cluster (10.77.0.I)" >&2; exit 1 ;;
esac
# Each host its own temporary folder (Open MPI keeps a session directory per host there, and the
# namespaces share one file system) and its own host name, cs-emu-hI, in a UTS namespace: what
# MPI_Get_processor_name reports, so measurements name the host each rank ran on.
mkdir -p "/tmp/cs-emu-h$i"
exec ip netns exec "cs-emu-h$i" unshare --uts env TMPDIR="/tmp/cs-emu-h$i" CS_EMU_HOST="cs-emu-h$i" \
    /bin/sh -c 'hostname "$CS_EMU_HOST" && exec /bin/sh -c "$0"' "$*"
