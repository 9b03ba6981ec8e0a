"""The model that decides every answer: how many CPU cores a vLLM server needs, and why.

The chain from a load to an answer, one module a step:

1. :mod:`~advisor.model.demand`: the load (GPUs, TP, executor, requests/s, prompt tokens,
   prefix hits, renderer workers) as CPU demand per process role, in cores;
2. :mod:`~advisor.model.waitmodel`: that demand at each core count as run-queue wait per role
   (the share of wall time runnable but not running), with its interval;
3. :mod:`~advisor.model.slowdown`: the wait as a TTFT slowdown against ample cores, and the
   fitted TTFT-vs-cores curve (parameters as JSON, numpy only: the job-submit path reads it);
4. :mod:`~advisor.model.prediction`: steps 1-3 for one load over the node's core range, once,
   as one record (:func:`~advisor.model.prediction.predict`) that every answer reads;
5. the answer, in :mod:`advisor.recommend`: the fewest cores at which the engine core and the
   API server wait at most ``--max-wait``, never below vLLM's 2 + N, a function of that record
   and the threshold.

What the model is checked and fitted on: :mod:`~advisor.model.knee` and
:mod:`~advisor.model.waitknee` (a measured series' TTFT and wait knees, paired-bootstrap
intervals), :mod:`~advisor.model.estimator` (the curve as a scikit-learn estimator) and
:mod:`~advisor.model.calibration` (points, series, the fit and its validation).

Import rule (``.importlinter``): the model imports no CLI, app, report or recommend code. This
file imports nothing, so that the job-submit path loads only the steps it reads.
"""
