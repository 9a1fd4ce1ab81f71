#!/usr/bin/env bash
# An emulated cluster on one machine (issue 12): N hosts as Linux network namespaces, each joined
# to a bridge "switch" namespace by a veth pair shaped with tbf to RATE in both directions, and a
# head namespace that runs mpirun. Addresses exist only inside the namespaces (10.77.0.1 … N for
# the hosts, 10.77.0.254 for the head). Open MPI starts its daemons through scripts/netns_agent.sh
# (`ip netns exec` instead of ssh) and talks TCP only over the bridge, so every byte between ranks
# crosses the shaped links. Needs root, iproute2 (ip, tc) and Open MPI.
#
#   scripts/emulated_cluster.sh up N [RATE]     # e.g. up 4 1gbit
#   scripts/emulated_cluster.sh mpirun ARGS…    # mpirun in the head, one rank per host in order
#   scripts/emulated_cluster.sh down
#
# The same test bed as a clustersim platform: tests/data/platforms/emulated4_1gbit.txt (a SimAI
# topology file: each host one rank with its own NIC, all on one switch).
set -euo pipefail
# CS_EMU_NET=X (1-254) builds a second cluster beside the default one: namespaces cs-emuX-…,
# addresses 10.77.X.…, so sessions sharing a machine do not tear down each other's hosts.
NET="${CS_EMU_NET:-0}"
[[ "$NET" =~ ^[0-9]+$ && "$NET" -le 254 ]] || { echo "emulated_cluster: CS_EMU_NET must be 0 to 254, got '$NET'" >&2; exit 2; }
PREFIX=cs-emu
[ "$NET" = 0 ] || PREFIX="cs-emu$NET"
SUBNET="10.77.$NET"
HERE="$(cd "$(dirname "$0")" && pwd)"
TBF="burst 256kb limit 4mb"

hosts() { ip netns list | awk '{print $1}' | grep -E "^${PREFIX}-h[0-9]+$" | sort -t h -k3 -n || true; }

down() {
    for ns in $(ip netns list | awk '{print $1}' | grep -E "^${PREFIX}-" || true); do
        ip netns del "$ns"
        rm -rf "/tmp/$ns"
    done
}

up() {
    local n="$1" rate="${2:-1gbit}"
    [[ "$n" =~ ^[0-9]+$ && "$n" -ge 1 && "$n" -le 64 ]] || { echo "emulated_cluster: up: N must be 1 to 64, got '$n'" >&2; exit 2; }
    down
    ip netns add "$PREFIX-sw"
    ip netns exec "$PREFIX-sw" ip link add br0 type bridge
    ip netns exec "$PREFIX-sw" ip link set br0 up
    # attach NS ADDRESS SHAPED: a veth from namespace NS to the bridge, NS side at ADDRESS.
    attach() {
        local ns="$1" addr="$2" shaped="$3" here="v$NET$4" there="s$NET$4"
        ip netns add "$ns"
        ip link add "$here" type veth peer name "$there"
        ip link set "$here" netns "$ns"
        ip link set "$there" netns "$PREFIX-sw"
        ip netns exec "$PREFIX-sw" ip link set "$there" master br0
        ip netns exec "$PREFIX-sw" ip link set "$there" up
        ip netns exec "$ns" ip link set lo up
        # A bulk-synchronous step leaves every connection idle between iterations: keep its window.
        ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_slow_start_after_idle=0
        ip netns exec "$ns" ip addr add "$addr/24" dev "$here"
        ip netns exec "$ns" ip link set "$here" up
        if [ "$shaped" = yes ]; then
            # Both directions: the host's egress, and the switch port's egress towards the host.
            # A queue of 4 MB (32 ms at 1 Gbit/s) drops nothing when three senders converge on one
            # host (this kernel has tbf but no fq_codel or netem); a 256 kB bucket passes a burst
            # of TCP segments whole. With 64 kB and 5 ms, drops cut Open MPI to 45-75 % of the rate.
            ip netns exec "$ns" tc qdisc add dev "$here" root tbf rate "$rate" $TBF
            ip netns exec "$PREFIX-sw" tc qdisc add dev "$there" root tbf rate "$rate" $TBF
        fi
    }
    attach "$PREFIX-head" "$SUBNET.254" no head
    for i in $(seq 1 "$n"); do
        attach "$PREFIX-h$i" "$SUBNET.$i" yes "h$i"
    done
}

run_mpi() {
    local list=()
    for ns in $(hosts); do list+=("$SUBNET.${ns##*-h}:1"); done
    [ "${#list[@]}" -gt 0 ] || { echo "emulated_cluster: no hosts: run 'up N' first" >&2; exit 2; }
    # One rank per host: more ranks than hosts would share a host's link unseen, so refuse them.
    local args=("$@") np="" k=0
    while [ "$k" -lt "${#args[@]}" ]; do  # mpirun's options, up to the program
        case "${args[$k]}" in
            -np|-n|--np) np="${args[$((k + 1))]:-}"; k=$((k + 2)) ;;
            --mca|-mca|-x) k=$((k + 3)); [ "${args[$((k - 3))]}" = -x ] && k=$((k - 1)) ;;
            -*) k=$((k + 1)) ;;
            *) break ;;
        esac
    done
    if [ -n "$np" ] && ! [[ "$np" =~ ^[0-9]+$ && "$np" -le "${#list[@]}" ]]; then
        echo "emulated_cluster: mpirun: -np $np: the cluster has ${#list[@]} hosts, one rank each" >&2
        exit 2
    fi
    local joined
    joined=$(IFS=,; echo "${list[*]}")
    mkdir -p "/tmp/$PREFIX-head"
    # Two TCP connections per pair of ranks: Open MPI's one connection carrying both directions
    # reaches half the rate each way. Idle ranks yield the CPU: busy-polling ranks on a machine of
    # fewer cores than hosts starve the ones that have data to move. All-to-all as the model (and
    # NCCL) runs it, every send and receive posted at once (Open MPI's "linear"): Open MPI 4.1's
    # fixed rules pick pairwise exchange for blocks of 512 KiB to 1 MiB on 4 to 7 ranks, so one
    # size in the middle of a measured range would run another algorithm, n − 1 dependent steps.
    exec ip netns exec "$PREFIX-head" env TMPDIR="/tmp/$PREFIX-head" mpirun --allow-run-as-root --host "$joined" \
        --mca plm_rsh_agent "$HERE/netns_agent.sh" --mca btl tcp,self \
        --mca btl_tcp_if_include "$SUBNET.0/24" --mca oob_tcp_if_include "$SUBNET.0/24" \
        --mca btl_tcp_links 2 --mca mpi_yield_when_idle 1 \
        --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_alltoall_algorithm 1 "$@"
}

case "${1:-}" in
    up) shift; up "$@" ;;
    down) down ;;
    mpirun) shift; run_mpi "$@" ;;
    *) echo "usage: $0 up N [RATE] | mpirun ARGS… | down" >&2; exit 2 ;;
esac
