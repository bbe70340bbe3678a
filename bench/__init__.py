"""The project's benchmark: `make bench` (python -m bench.run). Results: bench/results.{md,json}."""
