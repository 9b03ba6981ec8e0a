"""The engine side of a bench run: starting the server pinned to its cores and stopping it
(``engine``, ``pinning``), the stub server the tests start, the platform it runs on, and what
its processes use and wait for on the CPU (``procs``, ``waits``)."""
