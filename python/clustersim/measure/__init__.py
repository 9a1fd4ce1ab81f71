"""Measurements of a real cluster, and the model fitted to them: `bwtest` (the bisection
bandwidth tester, over MPI or on the flow model), `replay` (a SimAI workload run for real over
MPI), `kernels` (an iteration's kernels timed on a device) and `calibrate` (the network model
fitted to nccl-tests logs, bwtest and replay documents)."""
