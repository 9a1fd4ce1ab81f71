"""Workload replay over MPI (SimAI-Physical's job, with mpi4py): every rank reads a SimAI
workload file, builds its communicators and runs every row's collectives and the pipeline's
point-to-point transfers for real on NumPy buffers, checking every result and timing every op.

The IR of the file (`Workload.from_simai`) gives the groups — TP, DP, EP, DP_EP, PP as axes of
the Megatron layout, rank = Σ coord_d · Π_{k<d} size_k — and the ops in SimAI's order: forward
rows 0…N−1 (compute, then the fwd collective), then backward rows N−1…0 (ig compute, ig
collective, wg compute, wg collective). Each group becomes one MPI_Comm_split, coloured by the
rank's coordinates on the axes the group does not span. Sizes are nccl-tests' S (bytes of the
buffer), times `--scale`, in float64 elements. After the rows, the pipeline's 2·ga transfers of
pp_comm bytes between neighbouring stages (the default mode's PP term).

Every op runs blocking, after a barrier at the start of each row's phase block, so its exposed
time is its whole time: exposed comm = total comm. An op's time is the slowest rank's (MPI.Wtime
around the call), averaged over the timed iterations; algbw = S / t and busbw = algbw · factor
(2(n−1)/n for all-reduce, (n−1)/n for all-gather, reduce-scatter and all-to-all, 1 for
broadcast and reduce: nccl-tests' PERFORMANCE.md). The bubble is the default mode's
(p−1)/ga × Σ (compute + fwd/ig comm) over rows other than embedding_layer.

Modules: `plan` (the workload, its checks and its steps), `buffers` (fill and expected values of
each collective), `execute` (the MPI loop), `report` (the simulator's EndToEnd.csv and summary,
every op in replay.json, every rank's ops as a Chrome trace), `compare` (the same workload on the
flow model of a described fabric, per row beside the measurement).
"""
