"""Design-space exploration: many simulations of one command, searched, stored, reported and
compared.

    search    every valid parallel plan of a model on a cluster, ranked (`clustersim search`)
    sweep     `sweep()`: a sweep spec's points simulated and stored (`clustersim sweep`)
    spec      a sweep spec (YAML): a command, fixed options and a grid, list or seeded random
              sample over the command's options → the points, each keyed by a hash of its options
    store     the SQLite store: one row per point, committed as each point finishes (resumable)
    execute   running the points: in this process, on N worker processes, or on a Ray cluster
    export    the rows as flat columns: CSV and Parquet
    report    one self-contained HTML page: table, Pareto plot, breakdown, the spec
    compare   two runs side by side
    hcsim     HCSim's case studies (`clustersim study hcsim`)

(`clustersim.nccl_tests` is another thing: nccl-tests' size sweep of one collective.)
"""
