-- Node inventory: the CPUs jobs can use (scontrol's CPUEfctv, Slurm 23.02+: CPUTot less
-- specialised cores), next to CPUTot. The fair share uses it when known.
ALTER TABLE nodes ADD COLUMN cpus_effective INTEGER;
