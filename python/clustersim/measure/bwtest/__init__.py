"""The bisection bandwidth tester (seed 003, Hidayetoğlu's Bisection_Bandwidth_Tester), measured
over MPI or run on the flow model.

p ranks form G = p / g groups of g consecutive ranks (MPI_Comm_split with colour r // g). Rank r
talks to its counterpart r' = k·g + (r mod g) in every other group k (no self-traffic): it sends
and receives S = count × 32 bytes to and from each. One warm-up round, then N iterations, each
bulk-synchronised by a barrier. A group moves 2·g·(G−1)·S bytes per iteration (sent plus
received); its aggregate bidirectional bandwidth is that over the iteration time t:

    β_group = 2·g·(G−1)·S / t

Modules: `pattern` (the mapping and the byte counts), `measure` (MPI with NumPy or CuPy
buffers), `simulate` (the same flows on the flow model), `bound` (the platform's cut between a
group and the rest), `report` (the JSON document and the printed table).
"""
