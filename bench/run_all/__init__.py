"""bench/run-all's parts: the summary table (table.py), the rows made from
the benchmark programs' JSON (cells.py), the commands it reruns
(registry.py), plots (plots.py) and the command line (main.py)."""
