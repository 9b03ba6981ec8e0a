"""Long-lived processes a command keeps in the foreground: the WSGI server of
``advisor metrics --serve`` (:mod:`~advisor.serving.httpserve`) and the supervised child of
``advisor dashboard`` (:mod:`~advisor.serving.supervise`). Standard library only."""
