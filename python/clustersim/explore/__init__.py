"""Design-space studies: many simulations of one command, stored, reported and compared.

    spec      a sweep spec (YAML): a command, fixed options and a grid, list or seeded random
              sample over the command's options → the points, each keyed by a hash of its options
    store     the SQLite store: one row per point, committed as each point finishes (resumable)
    execute   running the points: in this process, on N worker processes, or on a Ray cluster
    export    the rows as flat columns: CSV and Parquet
    report    one self-contained HTML page: table, Pareto plot, breakdown, the spec
    compare   two runs side by side

(`clustersim.nccl_tests` is another thing: nccl-tests' size sweep of one collective.)
"""
