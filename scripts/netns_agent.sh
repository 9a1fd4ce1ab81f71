#!/bin/sh
# Open MPI's launch agent for scripts/emulated_cluster.sh: called as `netns_agent.sh HOST COMMAND…`
# where ssh would be, it runs COMMAND inside the namespace of host address 10.77.X.I (cs-emu-hI for
# X = 0, else cs-emuX-hI: CS_EMU_NET in scripts/emulated_cluster.sh).
host="$1"
shift
case "$host" in
    10.77.*.*) i="${host##*.}"; net="${host#10.77.}"; net="${net%.*}" ;;
    *) echo "netns_agent: $host is not a host of the emulated cluster (10.77.X.I)" >&2; exit 1 ;;
esac
prefix=cs-emu
[ "$net" = 0 ] || prefix="cs-emu$net"
# Each host its own temporary folder (Open MPI keeps a session directory per host there, and the
# namespaces share one file system) and its own host name, cs-emu-hI, in a UTS namespace: what
# MPI_Get_processor_name reports, so measurements name the host each rank ran on.
mkdir -p "/tmp/$prefix-h$i"
exec ip netns exec "$prefix-h$i" unshare --uts env TMPDIR="/tmp/$prefix-h$i" CS_EMU_HOST="cs-emu-h$i" \
    /bin/sh -c 'hostname "$CS_EMU_HOST" && exec /bin/sh -c "$0"' "$*"
