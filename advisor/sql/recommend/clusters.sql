-- recommend/clusters: the clusters whose jobs hold GPUs (a partition recommendation's clusters).
SELECT DISTINCT cluster FROM jobs WHERE gpus > 0 ORDER BY cluster
