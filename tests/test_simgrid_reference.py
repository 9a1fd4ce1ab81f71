"""The SimGrid harness (tests/simgrid_reference.py) against closed forms."""

from __future__ import annotations

import pytest
from simgrid_reference import completion_times, platform_xml, simgrid_available

pytestmark = pytest.mark.skipif(not simgrid_available(), reason="/usr/bin/python3 cannot import simgrid")

GB = 1e9


def test_lone_transfer_is_latency_plus_size_over_bandwidth():
    # formats.md §10: 1 GB over 1.25 GBps and 1 µs takes 0.800001 s with CM02, no TCP window, no
    # cross-traffic (LV08 would give 0.8660 s, CM02 with cross-traffic 0.8400 s).
    for equal_share in (True, False):
        (t,) = completion_times([(0, 1, 1.25e9, 1e-6, True)], [(0, 1, GB, 0.0)], [[0, 1]], equal_share)
        assert t == pytest.approx(0.800001, rel=1e-9)


def test_latencies_add_and_the_slowest_link_limits():
    links = [(0, 1, 10e9, 1e-6, True), (1, 2, 2e9, 3e-6, True), (2, 3, 5e9, 2e-6, True)]
    for equal_share in (True, False):
        (t,) = completion_times(links, [(0, 3, GB, 0.5)], [[0, 1, 2, 3]], equal_share)
        assert t == pytest.approx(0.5 + 6e-6 + 0.5, rel=1e-9)


def test_cm02_is_rtt_unfair_unless_equal_share():
    # Flows from 0 (1 ms away) and 1 (3 ms away) share the 1 GB/s link 2-3. Flow 0 runs alone from
    # 1 ms to 3 ms (2 MB), then the two share the link.
    links = [(0, 2, 10e9, 1e-3, True), (1, 2, 10e9, 3e-3, True), (2, 3, 1e9, 0.0, True)]
    flows = [(0, 3, GB, 0.0), (1, 3, GB, 0.0)]
    routes = [[0, 2, 3], [1, 2, 3]]
    # Equal shares: flow 0 needs 998 MB at 0.5 GB/s → 1.999 s; then flow 1 has 2 MB left alone → 2.001 s.
    assert completion_times(links, flows, routes) == pytest.approx([1.999, 2.001], rel=1e-9)
    # SimGrid's own CM02: shares in inverse proportion to latency, 3/4 and 1/4.
    raw = completion_times(links, flows, routes, equal_share=False)
    assert raw == pytest.approx([0.003 + 0.998 / 0.75, 2.001], rel=1e-9)


def test_two_flows_share_a_bottleneck():
    link = [(0, 1, 1e9, 0.0, True)]
    assert completion_times(link, [(0, 1, GB, 0.0), (0, 1, GB, 0.0)], [[0, 1], [0, 1]]) == pytest.approx(
        [2.0, 2.0], rel=1e-9
    )
    # A late, short flow: 0.25 GB go alone, then both share until the short one ends.
    times = completion_times(
        [(0, 1, 1e9, 1e-3, True)], [(0, 1, GB, 0.0), (0, 1, 0.5 * GB, 0.25)], [[0, 1]] * 2
    )
    assert times == pytest.approx([1.501, 1.251], rel=1e-9)


def test_full_duplex_directions_do_not_share_but_a_shared_link_does():
    flows = [(0, 1, GB, 0.0), (1, 0, GB, 0.0)]
    assert completion_times([(0, 1, 1e9, 0.0, True)], flows, [[0, 1], [1, 0]]) == pytest.approx([1.0, 1.0])
    directed = [(0, 1, 1e9, 0.0, False), (1, 0, 1e9, 0.0, False)]
    assert completion_times(directed, flows, [[0, 1], [1, 0]]) == pytest.approx([1.0, 1.0])
    with pytest.raises(ValueError, match="no link from 1 to 0"):
        platform_xml([(0, 1, 1e9, 0.0, False)], flows, [[0, 1], [1, 0]])


def test_classic_three_link_max_min():
    # Links 0-1 (1 GB/s), 1-2 (2 GB/s), 2-3 (3 GB/s). Flow A crosses all three; B, C, D one each.
    # Max-min: link 0-1 is the bottleneck, A = B = 0.5; then C = 2 − 0.5 = 1.5 and D = 3 − 0.5 = 2.5.
    # D (1 GB) ends at 0.4 s, C (1 GB) at 2/3 s, B (0.5 GB) at 1 s; A then has 0.5 GB left and runs at
    # 1 GB/s alone: it ends at 1.5 s.
    links = [(0, 1, 1e9, 0.0, True), (1, 2, 2e9, 0.0, True), (2, 3, 3e9, 0.0, True)]
    flows = [(0, 3, GB, 0.0), (0, 1, 0.5 * GB, 0.0), (1, 2, GB, 0.0), (2, 3, GB, 0.0)]
    routes = [[0, 1, 2, 3], [0, 1], [1, 2], [2, 3]]
    assert completion_times(links, flows, routes) == pytest.approx([1.5, 1.0, 2 / 3, 0.4], rel=1e-9)


def test_same_endpoints_different_routes_are_separate_flows():
    # Diamond 0-1-3 / 0-2-3: two 0→3 flows on disjoint routes each run at full speed; on the same
    # route they share it.
    links = [(0, 1, 1e9, 0.0, True), (1, 3, 1e9, 0.0, True), (0, 2, 1e9, 0.0, True), (2, 3, 1e9, 0.0, True)]
    flows = [(0, 3, GB, 0.0), (0, 3, GB, 0.0)]
    assert completion_times(links, flows, [[0, 1, 3], [0, 2, 3]]) == pytest.approx([1.0, 1.0], rel=1e-9)
    assert completion_times(links, flows, [[0, 1, 3], [0, 1, 3]]) == pytest.approx([2.0, 2.0], rel=1e-9)
