"""`clustersim calibrate`: fit the network model to measurements.

Measurements (nccl-tests logs, bwtest JSON) become series (`series`): times over sizes of one
collective or pattern on one set of ranks. Each is fitted by t = α + β·x (`fit`), x the bytes
that load the bottleneck, so 1/β is the achievable (bus) bandwidth and α the latency. With a
described fabric, each series is also simulated on it, before and after the fabric's link
classes are rescaled to the fits (`model`). Outputs (`report`): a SimAI busbw.yaml of the fitted
bus bandwidths (what `clustersim analytical -busbw` reads), the recalibrated fabric as a SimAI
topology file (what `-n` takes in `run`, `collective`, `train`), and a JSON report with every
point and residual.
"""
