"""CPU pressure (Linux PSI) of Slurm jobs: the node collector, the Prometheus import, and the
records ingest reads."""
